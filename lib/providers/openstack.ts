/**
 * The OpenStack cloud-controller-manager (OCCM, kubernetes/cloud-provider-openstack). Sources:
 * ../shared/reference/PROVIDER-FACTS.md §5 and ../shared/reference/upstream-manifests/openstack/
 * cloud-provider-openstack/manifests/controller-manager/ (c453fb7c).
 */
import type { ProviderDetails, ProviderInstance } from './catalog.ts';

const REPOSITORY = 'registry.k8s.io/provider-os/openstack-cloud-controller-manager';

/**
 * The highest promoted patch per minor (kubernetes/k8s.io images.yaml @03e61e40, PROVIDER-FACTS.md §5);
 * 1.34 is kops' OpenStackCCMTag and 1.36 the tag the upstream DaemonSet pins. 1.25, the last minor with the
 * in-tree provider and so the one every OpenStack migration runs on, is not in that table: v1.25.6 is the
 * tag a Magnum cluster-api driver's image list mirrors from registry.k8s.io/provider-os (inferred from
 * that list, not from the promotion file).
 */
const TAGS: Readonly<Record<number, string>> = {
  25: 'v1.25.6',
  27: 'v1.27.3',
  28: 'v1.28.3',
  29: 'v1.29.1',
  30: 'v1.30.3',
  31: 'v1.31.4',
  32: 'v1.32.1',
  33: 'v1.33.1',
  34: 'v1.34.0',
  36: 'v1.36.0',
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `openstack:///<nova uuid>`, or `openstack://<region>/<uuid>` with OS_CCM_REGIONAL=true
 * (pkg/openstack/instances.go). The region is not a zone, so it is not reported as one.
 */
export function parseOpenstackProviderID(providerID: string): ProviderInstance | undefined {
  const m = /^openstack:\/\/([^/]*)\/([^/]+)$/.exec(providerID);
  const id = m?.[2];
  return id !== undefined && UUID.test(id) ? { instanceId: id.toLowerCase() } : undefined;
}

export const OPENSTACK: ProviderDetails = {
  ccmCloudProvider: 'openstack',
  ccmImages: Object.fromEntries(Object.entries(TAGS).map(([minor, tag]) => [minor, `${REPOSITORY}:${tag}`])),
  namespace: 'kube-system',
  deploymentName: 'openstack-cloud-controller-manager',
  containerName: 'cloud-controller-manager',
  leaseName: 'cloud-controller-manager',
  manifest: 'openstack/cloud-controller-manager.yaml',
  // Upstream keeps the whole file in a Secret (kube-system/cloud-config, key cloud.conf). A carried-over
  // in-tree file is mounted from its node instead; one with the legacy [Global] secret-name is mounted as a
  // translated copy beside the Secret it names (controlplane/openstack-cloud-config.ts).
  cloudConfigFile: 'cloud.conf',
  cloudConfigRequired: true,
  // Neutron router routes, when cloud.conf names a [Route] router-id (pkg/openstack/routes.go).
  cloudRoutes: true,
  csiDrivers: ['cinder.csi.openstack.org', 'manila.csi.openstack.org'],
  parseProviderID: parseOpenstackProviderID,
};
