/**
 * Providers other than AWS migrated both ways on their twins: upgrade to the provider's CCM, then
 * downgrade back to the in-tree provider, with every node file given back byte for byte; on the in-process
 * API server and on a real kube-apiserver.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const GCP_MINI = fileURLToPath(new URL('../fixtures/twins/gcp-mini.yaml', import.meta.url));
const OPENSTACK_MINI = fileURLToPath(new URL('../fixtures/twins/openstack-mini.yaml', import.meta.url));
const VSPHERE_MINI = fileURLToPath(new URL('../fixtures/twins/vsphere-mini.yaml', import.meta.url));
const AZURE_MINI = fileURLToPath(new URL('../fixtures/twins/azure-mini.yaml', import.meta.url));

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

const hashes = (files: Map<string, string>, only: Map<string, string>) =>
  new Map([...files].filter(([f]) => only.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));

type Initialiser = 'cloud-node-controller' | 'cloud-node-manager';

/** Nodes that `by` initialised (its `Synced` events); the in-tree provider writes none. */
async function syncedBy(e: E2E, by: Initialiser): Promise<string[]> {
  const events = await e.t.core.listEventForAllNamespaces();
  return events.items
    .filter((ev) => ev.reason === 'Synced' && ev.source?.component === by)
    .map((ev) => ev.involvedObject.name ?? '');
}

async function kubeadmConfig(e: E2E): Promise<string | undefined> {
  const cm = await e.t.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
  return cm.data?.ClusterConfiguration;
}

interface ProviderCase {
  readonly title: string;
  readonly fixture: string;
  readonly inTree: string;
  readonly providerID: RegExp;
  readonly image: RegExp;
  /** Where kube-controller-manager read its cloud config: the CCM mounts the same file from its node. */
  readonly cloudConfig: string;
  /** Who initialises nodes once external: the CCM's cloud-node controller, or (Azure) each node's manager. */
  readonly initialiser: Initialiser;
  /** The in-tree PersistentVolumes of the fixture and their phase. */
  readonly volumes?: readonly (readonly [string, string])[];
}

const CASES: readonly ProviderCase[] = [
  {
    title: 'GCP (in-tree gce on kubeadm v1.30)',
    fixture: GCP_MINI,
    inTree: 'gce',
    providerID: /^gce:\/\/ccm-twin-gcp\//,
    image: /^registry\.k8s\.io\/cloud-provider-gcp\/cloud-controller-manager:v30\./,
    cloudConfig: '/etc/gce.conf',
    initialiser: 'cloud-node-controller',
    volumes: [['pv-data-0', 'Bound']],
  },
  {
    title: 'OpenStack (in-tree openstack on kubeadm v1.25)',
    fixture: OPENSTACK_MINI,
    inTree: 'openstack',
    providerID: /^openstack:\/\/\//,
    image: /openstack-cloud-controller-manager:v1\.25\./,
    cloudConfig: '/etc/kubernetes/cloud.conf',
    initialiser: 'cloud-node-controller',
  },
  {
    title: 'vSphere (in-tree vsphere on kubeadm v1.29)',
    fixture: VSPHERE_MINI,
    inTree: 'vsphere',
    providerID: /^vsphere:\/\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    image: /^registry\.k8s\.io\/cloud-pv-vsphere\/cloud-provider-vsphere:v1\.29\./,
    cloudConfig: '/etc/kubernetes/vsphere.conf',
    initialiser: 'cloud-node-controller',
  },
  {
    title: 'Azure (in-tree azure on kubeadm v1.29)',
    fixture: AZURE_MINI,
    inTree: 'azure',
    providerID:
      /^azure:\/\/\/subscriptions\/7ad62f19-2316-4af1-a819-84d50d5690de\/resourceGroups\/ccm-twin-azure\/providers\/Microsoft\.Compute\/virtualMachines\/[a-z0-9-]+$/,
    image: /^mcr\.microsoft\.com\/oss\/kubernetes\/azure-cloud-controller-manager:v1\.29\./,
    cloudConfig: '/etc/kubernetes/azure.json',
    initialiser: 'cloud-node-manager',
  },
];

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe.each(CASES)('$title upgraded to its CCM and back', (c) => {
    it('keeps its providerIDs, sees no invariant violation, and restores every file and kubeadm-config', async () => {
      e2e = await startE2E(await loadTwinSpec(c.fixture), server);
      const nodes = ['cp-1', 'worker-1', 'worker-2'];
      const start = await nodeFiles(e2e.t);
      const kubeadmAtStart = await kubeadmConfig(e2e);
      const providerIDs = async () =>
        Object.fromEntries(
          (await e2e?.t.core.listNode())?.items.map((n) => [n.metadata?.name, n.spec?.providerID]) ?? [],
        );
      const idsAtStart = await providerIDs();
      // In-tree volumes (gcp-mini's GCE PD, assets/twins/storage/gce-pd), bound before, after and back.
      const volumes = async () =>
        (await e2e?.t.core.listPersistentVolume())?.items.map((v) => [v.metadata?.name, v.status?.phase]);
      const volumesAtStart = await volumes();
      expect(volumesAtStart).toEqual(c.volumes ?? []);
      expect(Object.values(idsAtStart)).toEqual(nodes.map(() => expect.stringMatching(c.providerID)));
      expect(await syncedBy(e2e, c.initialiser)).toEqual([]);

      const up = await e2e.upgrade();
      expect(up.error).toBeUndefined();
      expect(up.status).toBe('SUCCEEDED');
      for (const node of nodes) {
        expect(e2e.t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('external');
      }
      const ccm = (await e2e.t.apps.listNamespacedDeployment({ namespace: 'kube-system' })).items.find((d) =>
        d.spec?.template.spec?.containers.some((x) => x.name === 'cloud-controller-manager'),
      );
      const container = ccm?.spec?.template.spec?.containers.find(
        (x) => x.name === 'cloud-controller-manager',
      );
      expect(container?.image).toMatch(c.image);
      expect(container?.args).toContain(`--cloud-config=${c.cloudConfig}`);
      expect(ccm?.spec?.template.spec?.volumes).toContainEqual(
        expect.objectContaining({ hostPath: { path: c.cloudConfig, type: 'File' } }),
      );
      // Every node was tainted and initialised again by the CCM (on Azure: by its own cloud-node-manager,
      // the CCM running without cloud-node), which gave it the very providerID the in-tree provider had.
      expect([...new Set(await syncedBy(e2e, c.initialiser))].sort()).toEqual(nodes);
      if (c.initialiser === 'cloud-node-manager')
        expect(await syncedBy(e2e, 'cloud-node-controller')).toEqual([]);
      expect(await providerIDs()).toEqual(idsAtStart);
      expect(await volumes()).toEqual(volumesAtStart);
      expect(await kubeadmConfig(e2e)).not.toContain(`cloud-provider: ${c.inTree}`);

      const down = await e2e.downgrade();
      expect(down.error).toBeUndefined();
      expect(down.status).toBe('SUCCEEDED');
      for (const node of nodes) {
        expect(e2e.t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe(c.inTree);
      }
      expect(hashes(await nodeFiles(e2e.t), start)).toEqual(hashes(start, start));
      expect(await volumes()).toEqual(volumesAtStart);
      expect(await kubeadmConfig(e2e)).toBe(kubeadmAtStart);
      expect(await providerIDs()).toEqual(idsAtStart);

      await e2e.t.twin.monitor.stop();
      expect(e2e.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    });
  });
});
