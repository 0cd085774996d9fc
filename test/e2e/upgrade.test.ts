/**
 * The upgrade end to end: the real synthesized ASL, run by the local engine, against the twin over HTTP,
 * with the node agent running as Jobs on the twin's nodes. What issue 3 lists under "Done means".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkDrift } from '../../lib/drift/check.ts';
import { localContext } from '../../lib/local/context.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec, kubeletExternal } from '../twin/running-twin.ts';
import { expectMigrated, UNINITIALIZED } from './expect-migrated.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

let e2e: E2E | undefined;

/**
 * aws-ha-mini's in-tree EBS volume (assets/twins/storage/aws-ebs) is still bound and attached, its driver
 * registered by every kubelet in a CSINode owned by the Node; a node whose driver then goes is named by drift.
 */
async function expectVolumesServed(run: E2E): Promise<void> {
  const { t } = run;
  expect((await t.core.readPersistentVolume({ name: 'pv-data-0' })).status?.phase).toBe('Bound');
  const attachments = (await t.storage.listVolumeAttachment()).items;
  expect(attachments.map((a) => [a.spec.nodeName, a.spec.attacher, a.status?.attached])).toEqual([
    ['worker-1', 'ebs.csi.aws.com', true],
  ]);
  const worker2 = await t.storage.readCSINode({ name: 'worker-2' });
  expect(worker2.spec.drivers.map((d) => d.name)).toEqual(['ebs.csi.aws.com']);
  expect(worker2.metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).toEqual(['Node/worker-2']);
  // The node plugin goes (its DaemonSet pod evicted): the kubelet takes the driver out of the CSINode.
  await t.storage.replaceCSINode({ name: 'worker-2', body: { ...worker2, spec: { drivers: [] } } });
  const report = await checkDrift(localContext({ clients: t, pollMs: 10 }), {
    clusterId: 'aws-ha-mini',
    provider: 'aws',
    expect: 'external',
    deep: false,
  });
  expect(report.findings.filter((f) => f.kind === 'csi-driver-missing').map((f) => f.object)).toEqual([
    'CSINode worker-2',
  ]);
}
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
      await expectVolumesServed(e2e);
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
