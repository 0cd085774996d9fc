/**
 * A flip that reaches a node after its run's way back began there is refused: the soak's seed 1014 (a
 * batch failed while another node's flip Job waited; the rollback restored that node, then the flip ran)
 * ended RolledBack with two kubelets still external.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runAgent } from '../../lib/agent/run.ts';

const FLAGS = '/var/lib/kubelet/kubeadm-flags.env';
const IN_TREE =
  'KUBELET_KUBEADM_ARGS="--cloud-provider=aws --pod-infra-container-image=registry.k8s.io/pause:3.9"\n';

let root: string;
const env = () => ({
  hostRoot: root,
  hostname: async () => 'worker-7',
  kubeletCommandLine: async () => undefined,
});
const flip = (runId: string) => ({
  op: 'set-flags',
  runId,
  kubelet: { flags: { 'cloud-provider': 'external' } },
});
const flagsFile = () => readFile(path.join(root, FLAGS), 'utf8');

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-late-flip-'));
  await mkdir(path.join(root, path.dirname(FLAGS)), { recursive: true });
  await writeFile(path.join(root, FLAGS), IN_TREE);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

it('refuses a flip of a run whose kubelet restore already ran on the node, changing nothing', async () => {
  const restore = { op: 'restore', runId: 'up-1', paths: [FLAGS], skipMissing: true };
  expect((await runAgent(restore, env())).ok).toBe(true);

  const late = await runAgent(flip('up-1'), env());

  expect(late.ok).toBe(false);
  expect(late.error).toContain('run up-1 restored this node');
  expect(await flagsFile()).toBe(IN_TREE);
});

it('flips for another run, and for this one before any restore', async () => {
  expect((await runAgent(flip('up-1'), env())).ok).toBe(true);
  expect(await flagsFile()).toContain('--cloud-provider=external');
  const restore = { op: 'restore', runId: 'up-1', paths: [FLAGS], skipMissing: true };
  expect((await runAgent(restore, env())).ok).toBe(true);
  expect(await flagsFile()).toBe(IN_TREE);

  expect((await runAgent(flip('up-2'), env())).ok).toBe(true);
  expect(await flagsFile()).toContain('--cloud-provider=external');
});
