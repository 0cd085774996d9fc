/**
 * A flip that reaches a node after its run's way back began there is refused: the soak's seed 1014 (a
 * batch failed while another node's flip Job waited; the rollback restored that node, then the flip ran)
 * ended RolledBack with two kubelets still external. A flip and a restore that meet on a node take turns
 * (lib/agent/host-lock.ts).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { HOST_LOCK_DIR, withHostLock } from '../../lib/agent/host-lock.ts';
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

it('makes a restore that comes while a flip of its run is half done wait for it: the node ends in-tree', async () => {
  // Preflight's inspection backs the original up.
  expect((await runAgent({ op: 'inspect', runId: 'up-1', paths: [FLAGS] }, env())).ok).toBe(true);
  const restore = { op: 'restore', runId: 'up-1', paths: [FLAGS], skipMissing: true };
  let restored: Promise<unknown> | undefined;
  // The flip has looked for the marker (none yet) and is planning its edit when the restore arrives.
  const slowHost = {
    ...env(),
    hostname: async () => {
      restored = runAgent(restore, env());
      await new Promise((r) => setTimeout(r, 200));
      return 'worker-7';
    },
  };

  const pinning = {
    ...flip('up-1'),
    kubelet: { flags: { 'cloud-provider': 'external' }, keepNodeName: 'worker-7' },
  };
  const flipped = await runAgent(pinning, slowHost);
  expect(restored).toBeDefined();
  await restored;

  expect(flipped.ok).toBe(true);
  expect(await flagsFile()).toBe(IN_TREE);
});

it('takes over the lock of an agent that died holding it, and waits for a live one', async () => {
  const lock = path.join(root, HOST_LOCK_DIR);
  await mkdir(lock, { recursive: true });
  // A pid that no process has (above Linux's pid_max).
  await writeFile(path.join(lock, 'owner'), '4194305\n');
  expect((await runAgent(flip('up-1'), env())).ok).toBe(true);
  expect(existsSync(lock)).toBe(false);

  await mkdir(lock);
  await writeFile(path.join(lock, 'owner'), `${process.pid}\n`);
  await expect(withHostLock(root, async () => 'ran', { waitMs: 300, pollMs: 20 })).rejects.toThrow(
    /another ccm-migrate agent has held this node's lock .* for over 0.3 s/,
  );
});
