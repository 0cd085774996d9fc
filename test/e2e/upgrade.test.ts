/**
 * The upgrade end to end: the real synthesized ASL, run by the local engine, against the twin over HTTP,
 * with the node agent running as Jobs on the twin's nodes. What issue 3 lists under "Done means".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec, kubeletExternal } from '../twin/running-twin.ts';
import { expectMigrated, UNINITIALIZED } from './expect-migrated.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('ccm-migrate upgrade on the AWS twin', () => {
    it('moves an HA cluster to the external CCM with never none and never two cloud controllers', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsHaMini), server);
      const progress: string[] = [];
      const result = await e2e.upgrade({
        maxUnavailable: 2,
        onProgress: (p) => progress.push(`${p.step} ${p.node ?? ''}`),
      });
      expect(result.error).toBeUndefined();
      expect(result.status).toBe('SUCCEEDED');
      await expectMigrated(e2e);
      // Control-plane nodes one at a time, in order, before any kubelet.
      const moves = progress.filter((p) => p.startsWith('move-control-plane-node'));
      expect(moves).toEqual([
        'move-control-plane-node cp-1',
        'move-control-plane-node cp-2',
        'move-control-plane-node cp-3',
      ]);
      const record = await e2e.store.get(result.clusterId, result.runId);
      expect(record?.status).toBe('succeeded');
      expect(result.transitions).toBeGreaterThan(10);
      expect(result.apiRequests).toBeGreaterThan(0);
    });

    it('changes nothing when run again: no node file written, no applied object changed, and says so', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      const files = await nodeFiles(e2e.t);
      const objects = await e2e.t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
      const ccm = await e2e.t.apps.readNamespacedDeployment({
        name: 'aws-cloud-controller-manager',
        namespace: 'kube-system',
      });

      const again = await e2e.upgrade();
      expect(again.status).toBe('SUCCEEDED');
      expect(again.resumed).toBe(false);
      expect((again.output as { preflight: { alreadyExternal: boolean } }).preflight.alreadyExternal).toBe(
        true,
      );
      expect(await nodeFiles(e2e.t)).toEqual(files);
      const ccmAfter = await e2e.t.apps.readNamespacedDeployment({
        name: 'aws-cloud-controller-manager',
        namespace: 'kube-system',
      });
      // Its spec (generation), not its status: the first run's last rollout (the CCM's full controller set)
      // may still be reported while the second run reads it.
      expect(ccmAfter.metadata?.generation).toBe(ccm.metadata?.generation);
      expect(ccmAfter.spec).toEqual(ccm.spec);
      const objectsAfter = await e2e.t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
      expect(objectsAfter.items.map((o) => o.metadata?.resourceVersion)).toEqual(
        objects.items.map((o) => o.metadata?.resourceVersion),
      );
      await expectMigrated(e2e);
    });
  });
});

describe('a node that joins during the upgrade', () => {
  it('is initialised by the CCM when it joins with an external kubelet', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const { t } = e2e;
    const externalFlags = kubeletExternal(await t.readFile('worker-1', '/var/lib/kubelet/kubeadm-flags.env'));
    let joined: Promise<string> | undefined;
    const result = await e2e.upgrade({
      onEvent: (event) => {
        if (event.type === 'StateEntered' && event.state.name === UPGRADE_STATES.kubelets) {
          joined = t.twin.nodes.join('worker', {
            files: { '/var/lib/kubelet/kubeadm-flags.env': externalFlags },
          });
        }
      },
    });
    expect(result.status).toBe('SUCCEEDED');
    const name = await joined;
    expect(name).toBe('worker-3');
    const node = await t.core.readNode({ name: name as string });
    expect(node.spec?.providerID).toBe(t.twin.cloud.instanceFor(name as string)?.providerID);
    expect(node.spec?.taints?.some((x) => x.key === UNINITIALIZED) ?? false).toBe(false);
    expect((result.output as { verification: { nodes: number } }).verification.nodes).toBe(4);
  });
});
