/**
 * The rendered AWS CCM on a twin whose control plane and kubelets have already left the in-tree provider
 * (kubelets external, kube-controller-manager without cloud flags): applied with lib/kube/apply.ts through
 * the real client, it runs, takes its Lease and initialises every tainted node; applied again it changes
 * nothing.
 */
import { describe, expect, it } from 'vitest';
import { applyObjects } from '../../lib/kube/apply.ts';
import { UNINITIALIZED_TAINT } from '../../lib/kube/well-known.ts';
import { providerFacts } from '../../lib/providers/catalog.ts';
import { parseProviderID } from '../../lib/providers/provider-id.ts';
import { CCM_LABEL_SELECTOR, renderCcmObjects } from '../../lib/providers/render.ts';
import {
  CLOUD_CONF,
  dropCloudFlags,
  eventually,
  FIXTURES,
  fixtureTwins,
  isReady,
  KCM,
  KUBELET_FLAGS,
  kubeletExternal,
  type TestTwin,
} from '../twin/running-twin.ts';

const start = fixtureTwins();

const tainted = async (t: TestTwin) =>
  (await t.core.listNode()).items
    .filter((n) => n.spec?.taints?.some((taint) => taint.key === UNINITIALIZED_TAINT))
    .map((n) => n.metadata?.name);

describe('the rendered AWS cloud-controller-manager on a twin', () => {
  it('stages at zero, then runs, leads and initialises the tainted nodes; a re-apply changes nothing', async () => {
    const t = await start(FIXTURES.awsMini, {
      edits: [
        { group: 'cp', file: KUBELET_FLAGS, edit: kubeletExternal },
        { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal },
        { group: 'cp', file: KCM, edit: dropCloudFlags },
      ],
    });
    expect((await tainted(t)).sort()).toEqual(['cp-1', 'worker-1', 'worker-2']);
    const input = {
      provider: 'aws' as const,
      kubernetesVersion: t.twin.spec.kubernetesVersion,
      clusterName: 'kubernetes',
      cloudConfig: await t.readFile('cp-1', CLOUD_CONF),
    };

    const staged = await applyObjects(t, renderCcmObjects({ ...input, replicas: 0 }));
    expect(staged.map((a) => [a.kind, a.changed])).toEqual([
      ['ServiceAccount', true],
      ['ClusterRole', true],
      ['ClusterRoleBinding', true],
      ['RoleBinding', true],
      ['Secret', true],
      ['Deployment', true],
    ]);
    const facts = providerFacts('aws');
    const listCcmPods = async () =>
      (await t.core.listNamespacedPod({ namespace: facts.namespace, labelSelector: CCM_LABEL_SELECTOR }))
        .items;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await listCcmPods()).toEqual([]);

    const started = await applyObjects(t, renderCcmObjects({ ...input, replicas: 1 }));
    expect(started.filter((a) => a.changed).map((a) => a.kind)).toEqual(['Deployment']);
    const [pod] = await eventually(
      async () => {
        const pods = await listCcmPods();
        return pods.length === 1 && pods.every((p) => isReady(p as never)) && pods;
      },
      { what: 'one Ready CCM pod' },
    );
    expect(pod?.spec?.nodeName).toBe('cp-1');
    expect(pod?.spec?.containers[0]?.image).toBe(
      'registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.14',
    );
    await eventually(async () => (await tainted(t)).length === 0, { what: 'every node initialised' });
    const lease = await t.coordination.readNamespacedLease({
      name: facts.leaseName,
      namespace: facts.namespace,
    });
    // A host-network pod's hostname is its node's: client-go's identity is `<hostname>_<uuid>`.
    expect(lease.spec?.holderIdentity).toMatch(/^cp-1_/);
    for (const node of (await t.core.listNode()).items) {
      const instance = t.twin.cloud.instanceFor(node.metadata?.name ?? '');
      expect(node.spec?.providerID).toBe(instance?.providerID);
      expect(parseProviderID(node.spec?.providerID ?? '')).toEqual({
        provider: 'aws',
        zone: instance?.zone,
        instanceId: instance?.id,
      });
    }

    const again = await applyObjects(t, renderCcmObjects({ ...input, replicas: 1 }));
    expect(again.filter((a) => a.changed)).toEqual([]);
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().map((v) => v.kind)).not.toContain('two-cloud-controllers');
  });
});
