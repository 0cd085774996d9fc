/**
 * A run cut anywhere finishes when started again: `ccm-migrate upgrade` as a child process, killed with
 * SIGKILL at each step boundary and in the middle of a kubelet batch, then run again with the same cluster
 * id and state dir. The second run resumes the first (same run id, its snapshot) and the cluster ends as
 * after an uncut run.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { nodeNames } from '../../lib/twin/spec.ts';
import { FIXTURES, fixtureSpec, KCM, startTestTwin, type TestTwin } from '../twin/running-twin.ts';

const BIN = fileURLToPath(new URL('../../bin/ccm-migrate.js', import.meta.url));

let t: TestTwin | undefined;
let dir: string | undefined;
afterEach(async () => {
  await t?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  t = undefined;
  dir = undefined;
});

/** Run a CLI command; with `killAt`, SIGKILL it as soon as that text appears in its output. */
function cli(
  command: 'upgrade' | 'downgrade',
  args: string[],
  killAt?: string,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const take = (chunk: Buffer): void => {
      out += chunk.toString();
      if (killAt && out.includes(killAt)) child.kill('SIGKILL');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('an upgrade killed and started again', () => {
  it.each([
    ['after preflight', '▶ Stage the CCM'],
    ['while the control plane moves', 'move-control-plane-node cp-1:'],
    ['before the CCM starts', '▶ Start the CCM'],
    ['in the middle of a kubelet batch', 'flip-kubelet worker-1:'],
    ['during verification', '▶ Verify the cluster'],
  ])('finishes when cut %s', async (_when, killAt) => {
    t = await startTestTwin(await fixtureSpec(FIXTURES.awsMini));
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-resume-'));
    const args = ['--cluster-id', 'mini', '--kubeconfig', t.twin.kubeconfigPath, '--state-dir', dir, '--yes'];

    const cut = await cli('upgrade', args, killAt);
    expect(cut.code, cut.out).toBeNull();
    const store = new LocalRunStore(dir);
    const unfinished = await store.current('mini');
    expect(unfinished?.status).toBe('running');

    const again = await cli('upgrade', args);
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain(`run ${unfinished?.runId} (resumed)`);

    for (const group of t.twin.spec.nodeGroups) {
      for (const node of nodeNames(group)) {
        expect(t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('external');
      }
    }
    const kcm = await t.readFile('cp-1', '/etc/kubernetes/manifests/kube-controller-manager.yaml');
    expect(kcm).toContain('--cloud-provider=external');
    expect(kcm).not.toContain('--cloud-config');
    const nodes = (await t.core.listNode()).items;
    expect(nodes.flatMap((n) => n.spec?.taints ?? []).filter((x) => x.key.includes('uninitialized'))).toEqual(
      [],
    );
    const jobs = await t.batch.listNamespacedJob({ namespace: 'kube-system' });
    expect(jobs.items.map((j) => j.metadata?.name)).toEqual([]);
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  });

  it('finishes a route-based HA cluster cut with its control plane half moved, and carries its routes over', async () => {
    // kubenet: every kube-controller-manager programs routes; once cut, one of them runs external.
    const spec = await fixtureSpec(FIXTURES.awsHaMini, {
      edits: [
        {
          group: 'cp',
          file: KCM,
          edit: (text) => text.replace(/^ *- --configure-cloud-routes=false\n/m, ''),
        },
      ],
    });
    t = await startTestTwin(spec);
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-resume-'));
    const args = ['--cluster-id', 'ha', '--kubeconfig', t.twin.kubeconfigPath, '--state-dir', dir, '--yes'];
    const cut = await cli('upgrade', args, 'move-control-plane-node cp-1:');
    expect(cut.code, cut.out).toBeNull();
    const again = await cli('upgrade', args);
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain('(resumed)');
    const ccm = await t.apps.readNamespacedDeployment({
      name: 'aws-cloud-controller-manager',
      namespace: 'kube-system',
    });
    expect(ccm.spec?.template.spec?.containers[0]?.args).toContain('--configure-cloud-routes=true');
  });

  it('finishes a downgrade cut in the middle of its kubelet batch', async () => {
    t = await startTestTwin(await fixtureSpec(FIXTURES.awsMini));
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-resume-'));
    const args = ['--cluster-id', 'mini', '--kubeconfig', t.twin.kubeconfigPath, '--state-dir', dir, '--yes'];
    expect((await cli('upgrade', args)).code).toBe(0);

    const cut = await cli('downgrade', args, 'restore-kubelet worker-1:');
    expect(cut.code, cut.out).toBeNull();
    const again = await cli('downgrade', args);
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain('(resumed)');
    for (const node of ['cp-1', 'worker-1', 'worker-2']) {
      expect(t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('aws');
    }
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  });
});
