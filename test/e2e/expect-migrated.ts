/** What an AWS twin looks like once the upgrade moved it to the external CCM (the end-to-end tests' check). */
import { expect } from 'vitest';
import { clusterConfigurationArgs } from '../../lib/controlplane/kubeadm-config.ts';
import { nodeNames } from '../../lib/twin/spec.ts';
import type { E2E } from './harness.ts';

export const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const IN_TREE = /--cloud-provider=aws|--cloud-config/;
const NODE_FILES = [
  '/etc/kubernetes/manifests/kube-apiserver.yaml',
  '/etc/kubernetes/manifests/kube-controller-manager.yaml',
  '/var/lib/kubelet/kubeadm-flags.env',
  '/etc/default/kubelet',
];

/**
 * No node file names the in-tree provider, every kubelet runs external, the CCM is Ready and initialised
 * every node, kubeadm's ClusterConfiguration agrees, and the invariant monitor saw nothing but API outages.
 */
export async function expectMigrated(run: E2E): Promise<void> {
  const { t } = run;
  for (const group of t.twin.spec.nodeGroups) {
    for (const node of nodeNames(group)) {
      for (const file of NODE_FILES) {
        const text = await t.readFile(node, file).catch(() => '');
        expect(text, `${node}:${file}`).not.toMatch(IN_TREE);
      }
      expect(t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('external');
    }
  }
  const ccm = await t.apps.readNamespacedDeployment({
    name: 'aws-cloud-controller-manager',
    namespace: 'kube-system',
  });
  expect(ccm.status?.readyReplicas ?? 0).toBeGreaterThan(0);
  const nodes = (await t.core.listNode()).items;
  for (const node of nodes) {
    expect(
      node.spec?.taints?.some((taint) => taint.key === UNINITIALIZED) ?? false,
      node.metadata?.name,
    ).toBe(false);
    expect(node.spec?.providerID, node.metadata?.name).toMatch(/^aws:\/\/\//);
  }
  // kubeadm's own record agrees, so that the next `kubeadm upgrade` keeps the control plane external.
  const kubeadm = await t.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
  const config = kubeadm.data?.ClusterConfiguration ?? '';
  expect(clusterConfigurationArgs(config, 'controllerManager').get('cloud-provider')).toBe('external');
  expect(clusterConfigurationArgs(config, 'apiServer').has('cloud-provider')).toBe(false);
  expect(config).not.toContain('cloud.conf');
  await t.twin.monitor.stop();
  const violations = t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable');
  expect(violations).toEqual([]);
}
