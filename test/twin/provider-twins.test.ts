/**
 * The provider twins start as the clusters they stand for: every node Ready with the providerID its
 * in-tree provider gave it, and every control-plane component running with the in-tree flags (the twin
 * crash-loops a component whose cloud flags the version rejects, e.g. gce on 1.30 without the gates).
 * The IBM twin, external from birth, starts as kubelets with --cloud-provider=external leave a cluster
 * without a CCM: every node Ready, tainted uninitialized, without a providerID.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { isNodeReady } from '../../lib/steps/cluster.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { startTestTwin, type TestTwin } from './running-twin.ts';

const spec = (file: string) => loadTwinSpec(fileURLToPath(new URL(file, import.meta.url)));
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

let t: TestTwin | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('the GCP twin (kubeadm v1.30, in-tree gce)', () => {
  it('starts with every node Ready and named gce://<project>/<zone>/<name> by the in-tree provider', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/gcp-mini.yaml'));
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(['cp-1', 'worker-1', 'worker-2']);
    for (const node of nodes) {
      const name = node.metadata?.name ?? '';
      expect(isNodeReady(node), name).toBe(true);
      const zone = node.metadata?.labels?.['topology.kubernetes.io/zone'];
      expect(zone, name).toMatch(/^us-central1-[abc]$/);
      expect(node.spec?.providerID, name).toBe(`gce://ccm-twin-gcp/${zone}/${name}`);
      expect(node.spec?.taints ?? [], name).not.toContainEqual(
        expect.objectContaining({ key: 'node.cloudprovider.kubernetes.io/uninitialized' }),
      );
      expect(t.twin.nodes.kubelet(name).flags.get('cloud-provider'), name).toBe('gce');
    }
  });

  it('runs kube-apiserver and kube-controller-manager with in-tree gce and the gates that allow it', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/gcp-mini.yaml'));
    for (const component of ['kube-apiserver', 'kube-controller-manager']) {
      const pod = await t.core.readNamespacedPod({ name: `${component}-cp-1`, namespace: 'kube-system' });
      expect(pod.status?.conditions, component).toContainEqual(
        expect.objectContaining({ type: 'Ready', status: 'True' }),
      );
      expect(pod.spec?.containers[0]?.command, component).toEqual(
        expect.arrayContaining([
          '--cloud-provider=gce',
          '--cloud-config=/etc/gce.conf',
          '--feature-gates=DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false',
        ]),
      );
    }
  });

  it('crash-loops kube-controller-manager whose in-tree gce lacks the 1.30 gates, as the real binary', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/gcp-mini.yaml'));
    const kcm = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
    const text = await t.readFile('cp-1', kcm);
    await t.writeFile('cp-1', kcm, text.replace(/^ *- --feature-gates=.*\n/m, ''));
    await expect
      .poll(async () => {
        const pod = await t?.core.readNamespacedPod({
          name: 'kube-controller-manager-cp-1',
          namespace: 'kube-system',
        });
        return pod?.status?.containerStatuses?.[0]?.lastState?.terminated?.message;
      })
      .toMatch(/built-in cloud providers are disabled/);
  });
});

describe('the OpenStack twin (kubeadm v1.25, in-tree openstack)', () => {
  it('starts with every node Ready, named openstack:///<instance-uuid>, every component on in-tree openstack', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/openstack-mini.yaml'));
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(['cp-1', 'worker-1', 'worker-2']);
    for (const node of nodes) {
      const name = node.metadata?.name ?? '';
      expect(isNodeReady(node), name).toBe(true);
      expect(node.spec?.providerID, name).toMatch(new RegExp(`^openstack:///${UUID}$`));
      expect(t.twin.nodes.kubelet(name).flags.get('cloud-provider'), name).toBe('openstack');
    }
    for (const component of ['kube-apiserver', 'kube-controller-manager']) {
      const pod = await t.core.readNamespacedPod({ name: `${component}-cp-1`, namespace: 'kube-system' });
      expect(pod.status?.conditions, component).toContainEqual(
        expect.objectContaining({ type: 'Ready', status: 'True' }),
      );
      expect(pod.spec?.containers[0]?.command, component).toContain('--cloud-provider=openstack');
    }
  });
});

describe('the vSphere twin (kubeadm v1.29, in-tree vsphere)', () => {
  it('starts with every node Ready, named vsphere://<VM UUID> and zoned by the in-tree provider', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/vsphere-mini.yaml'));
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(['cp-1', 'worker-1', 'worker-2']);
    const ids = new Set<string>();
    for (const node of nodes) {
      const name = node.metadata?.name ?? '';
      expect(isNodeReady(node), name).toBe(true);
      expect(node.spec?.providerID, name).toMatch(new RegExp(`^vsphere://${UUID}$`));
      ids.add(node.spec?.providerID ?? '');
      expect(node.metadata?.labels?.['topology.kubernetes.io/zone'], name).toMatch(/^zone-[abc]$/);
      expect(node.spec?.taints ?? [], name).not.toContainEqual(
        expect.objectContaining({ key: 'node.cloudprovider.kubernetes.io/uninitialized' }),
      );
      const kubelet = t.twin.nodes.kubelet(name).flags;
      expect([kubelet.get('cloud-provider'), kubelet.get('cloud-config')], name).toEqual([
        'vsphere',
        '/etc/kubernetes/vsphere.conf',
      ]);
    }
    // One VM per node: a shared UUID would make the CCM initialise two nodes as one instance.
    expect(ids.size).toBe(nodes.length);
  });

  it('runs kube-apiserver and kube-controller-manager with in-tree vsphere and the 1.29 gates', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/vsphere-mini.yaml'));
    for (const component of ['kube-apiserver', 'kube-controller-manager']) {
      const pod = await t.core.readNamespacedPod({ name: `${component}-cp-1`, namespace: 'kube-system' });
      expect(pod.status?.conditions, component).toContainEqual(
        expect.objectContaining({ type: 'Ready', status: 'True' }),
      );
      expect(pod.spec?.containers[0]?.command, component).toEqual(
        expect.arrayContaining([
          '--cloud-provider=vsphere',
          '--cloud-config=/etc/kubernetes/vsphere.conf',
          '--feature-gates=DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false',
        ]),
      );
    }
  });

  it('carries a legacy INI vsphere.conf that names its credentials Secret and holds none itself', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/vsphere-mini.yaml'));
    const conf = await t.readFile('worker-1', '/etc/kubernetes/vsphere.conf');
    expect(conf).toMatch(/^\[Global\]$/m);
    expect(conf).toMatch(/^secret-name = "vsphere-credentials"$/m);
    expect(conf).toMatch(/^\[VirtualCenter "vcenter\.ccm-twin\.example"\]$/m);
    expect(conf).not.toMatch(/^\s*(user|password)\s*=/m);
  });
});

describe('the Azure twin (kubeadm v1.29, in-tree azure)', () => {
  it('starts with every node Ready, named by its VM in azure.json’s subscription and resource group', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/azure-mini.yaml'));
    const config = JSON.parse(await t.readFile('cp-1', '/etc/kubernetes/azure.json')) as Record<
      string,
      unknown
    >;
    // The managed identity: no client secret in the file.
    expect(config).toMatchObject({ useManagedIdentityExtension: true });
    expect(config).not.toHaveProperty('aadClientSecret');
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(['cp-1', 'worker-1', 'worker-2']);
    for (const node of nodes) {
      const name = node.metadata?.name ?? '';
      expect(isNodeReady(node), name).toBe(true);
      expect(node.spec?.providerID, name).toBe(
        `azure:///subscriptions/${config.subscriptionId}/resourceGroups/${config.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${name}`,
      );
      expect(t.twin.nodes.kubelet(name).flags.get('cloud-provider'), name).toBe('azure');
    }
    for (const component of ['kube-apiserver', 'kube-controller-manager']) {
      const pod = await t.core.readNamespacedPod({ name: `${component}-cp-1`, namespace: 'kube-system' });
      expect(pod.status?.conditions, component).toContainEqual(
        expect.objectContaining({ type: 'Ready', status: 'True' }),
      );
      expect(pod.spec?.containers[0]?.command, component).toEqual(
        expect.arrayContaining([
          '--cloud-provider=azure',
          '--cloud-config=/etc/kubernetes/azure.json',
          '--feature-gates=DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false',
        ]),
      );
    }
  });
});

describe('the IBM twin (kubeadm v1.30, external from birth)', () => {
  const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

  it('starts with every node Ready, tainted uninitialized and without a providerID, and no cloud controller', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/ibm-mini.yaml'));
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(['cp-1', 'cp-2', 'worker-1', 'worker-2']);
    for (const node of nodes) {
      const name = node.metadata?.name ?? '';
      expect(isNodeReady(node), name).toBe(true);
      expect(node.spec?.providerID, name).toBeUndefined();
      expect(node.spec?.taints, name).toContainEqual({
        key: UNINITIALIZED,
        value: 'true',
        effect: 'NoSchedule',
      });
      // Only what the kubelet itself knows: no zone, region or instance type before a CCM.
      expect(node.metadata?.labels?.['topology.kubernetes.io/zone'], name).toBeUndefined();
      expect(t.twin.nodes.kubelet(name).flags.get('cloud-provider'), name).toBe('external');
    }
    expect(t.twin.controllers.active()).toEqual([]);
    expect(t.twin.controllers.uninitialisable(nodes.map((n) => n.metadata?.name ?? '')).sort()).toEqual([
      'cp-1',
      'cp-2',
      'worker-1',
      'worker-2',
    ]);
  });

  it('runs kube-controller-manager external and kube-apiserver without any cloud flag', async () => {
    t = await startTestTwin(await spec('../fixtures/twins/ibm-mini.yaml'));
    for (const node of ['cp-1', 'cp-2']) {
      const cloudFlags: Record<string, string[]> = {};
      for (const component of ['kube-apiserver', 'kube-controller-manager']) {
        const pod = await t.core.readNamespacedPod({
          name: `${component}-${node}`,
          namespace: 'kube-system',
        });
        expect(pod.status?.conditions, component).toContainEqual(
          expect.objectContaining({ type: 'Ready', status: 'True' }),
        );
        cloudFlags[component] = (pod.spec?.containers[0]?.command ?? []).filter((a) =>
          /^--(cloud-provider|cloud-config|feature-gates)=/.test(a),
        );
      }
      expect(cloudFlags, node).toEqual({
        'kube-apiserver': [],
        'kube-controller-manager': ['--cloud-provider=external'],
      });
    }
  });

  it('keeps the CCM’s cloud config on control-plane nodes, naming the twin’s account and cluster, no key', async () => {
    const example = await spec('../../assets/twins/ibm.yaml');
    const config = example.nodeGroups.find((g) => g.role === 'control-plane')?.files[
      '/etc/kubernetes/ibm-cloud-config.ini'
    ];
    const account = createHash('sha256').update(example.cloud.project).digest('hex').slice(0, 32);
    expect(config).toMatch(new RegExp(`^accountID = ${account}$`, 'm'));
    expect(config).toMatch(new RegExp(`^clusterID = ${example.name}$`, 'm'));
    expect(config).toMatch(/^cluster-default-provider = g2$/m);
    expect(config).not.toMatch(/api.?key\s*=/i);
    for (const group of example.nodeGroups.filter((g) => g.role === 'worker')) {
      expect(Object.keys(group.files)).not.toContain('/etc/kubernetes/ibm-cloud-config.ini');
    }
  });
});

describe.each([
  ['azure', '../../assets/twins/azure.yaml', '../fixtures/twins/azure-mini.yaml'],
  ['ibm', '../../assets/twins/ibm.yaml', '../fixtures/twins/ibm-mini.yaml'],
  ['gcp', '../../assets/twins/gcp.yaml', '../fixtures/twins/gcp-mini.yaml'],
  ['vsphere', '../../assets/twins/vsphere.yaml', '../fixtures/twins/vsphere-mini.yaml'],
])('the %s test fixture', (_name, exampleFile, miniFile) => {
  it('is its example spec made small: same version, cloud and host files', async () => {
    const [example, mini] = await Promise.all([spec(exampleFile), spec(miniFile)]);
    expect(mini.kubernetesVersion).toBe(example.kubernetesVersion);
    expect(mini.cloud).toEqual(example.cloud);
    expect(mini.nodeGroups.map((g) => g.files)).toEqual(example.nodeGroups.map((g) => g.files));
    expect(mini.objects).toEqual(example.objects);
  });
});
