/**
 * An upgrade that fails after preflight undoes exactly what it changed and ends RolledBack, the cluster as
 * it started; a rollback that cannot finish stops and names where it stands.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { EventLog } from '../../lib/local/engine.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

function entered(state: string, then: () => void): (event: EventLog) => void {
  return (event) => {
    if (event.type === 'StateEntered' && event.state.name === state) then();
  };
}

describe('an upgrade that fails rolls back', () => {
  it('ends RolledBack with every node file and object as at the start when the API fails at a step', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsHaMini));
    const { t } = e2e;
    const start = await nodeFiles(t);
    const kubeadm = await t.core.readNamespacedConfigMap({
      name: 'kubeadm-config',
      namespace: 'kube-system',
    });
    const fail = entered(UPGRADE_STATES.activate, () =>
      t.twin.faults.add({ kind: 'error', rate: 1, code: 500, verb: 'patch', resource: 'deployments' }),
    );
    const heal = entered(UPGRADE_STATES.rollbackKubelets, () => t.twin.faults.clear('error'));

    const result = await e2e.upgrade({
      onEvent: (event) => {
        fail(event);
        heal(event);
      },
    });

    expect(result.status).toBe('FAILED');
    expect(result.error?.name).toBe('RolledBack');
    expect(result.error?.cause).toMatch(/HTTP 500/);
    const hashes = (files: Map<string, string>) =>
      new Map([...files].filter(([f]) => start.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));
    expect(hashes(await nodeFiles(t))).toEqual(hashes(start));
    for (const node of ['cp-1', 'cp-2', 'cp-3']) {
      const kcm = await t.core.readNamespacedPod({
        name: `kube-controller-manager-${node}`,
        namespace: 'kube-system',
      });
      expect(kcm.spec?.containers[0]?.command, node).toContain('--cloud-provider=aws');
    }
    await expect(
      t.apps.readNamespacedDeployment({ name: 'aws-cloud-controller-manager', namespace: 'kube-system' }),
    ).rejects.toThrow();
    expect(
      (await t.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' })).data,
    ).toEqual(kubeadm.data);
    const record = await e2e.store.get(result.clusterId, result.runId);
    expect(record?.status).toBe('rolled-back');
    expect(record?.error?.message).toMatch(/HTTP 500/);
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  });

  it('ends RolledBack with the control plane as it started when a kube-apiserver crash-loops with the new flags', async () => {
    e2e = await startE2E(
      await fixtureSpec(FIXTURES.awsHaMini, {
        overrides: {
          faults: [
            { kind: 'crashWithoutFlag', node: 'cp-2', component: 'kube-apiserver', flag: 'cloud-provider' },
          ],
        },
      }),
    );
    const { t } = e2e;
    const start = await nodeFiles(t);
    const result = await e2e.upgrade({ waitMs: 300 });
    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(result.error?.cause).toMatch(/kube-apiserver on cp-2/);
    const hashes = (files: Map<string, string>) =>
      new Map([...files].filter(([f]) => start.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));
    expect(hashes(await nodeFiles(t))).toEqual(hashes(start));
    const kas = await t.core.readNamespacedPod({ name: 'kube-apiserver-cp-2', namespace: 'kube-system' });
    expect(kas.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect((await e2e.store.get(result.clusterId, result.runId))?.status).toBe('rolled-back');
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  });

  it('stops and names the node when a kubelet never comes back and the agent cannot reach it', async () => {
    e2e = await startE2E(
      await fixtureSpec(FIXTURES.awsMini, {
        overrides: { faults: [{ kind: 'nodeNeverReturns', node: 'worker-2' }] },
      }),
    );
    const result = await e2e.upgrade({ waitMs: 300 });
    expect(result.status).toBe('FAILED');
    expect(result.error?.name).not.toBe('RolledBack');
    expect(result.error?.cause).toMatch(/worker-2/);
    const record = await e2e.store.get(result.clusterId, result.runId);
    expect(record?.status).toBe('failed');
  });
});
