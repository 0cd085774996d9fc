/**
 * The GCP cloud-controller-manager (kubernetes/cloud-provider-gcp). Sources: ../shared/reference/
 * PROVIDER-FACTS.md §3 and ../shared/reference/upstream-manifests/gcp/cloud-provider-gcp/deploy/packages/
 * default/manifest.yaml (4e245312).
 */
import type { ProviderDetails, ProviderInstance } from './catalog.ts';

const REPOSITORY = 'registry.k8s.io/cloud-provider-gcp/cloud-controller-manager';

/**
 * The highest promoted tag per minor (kubernetes/k8s.io images.yaml @43401df3, PROVIDER-FACTS.md §3). The
 * tag's major is the Kubernetes minor (docs/RELEASE.md). 1.31 has no image at all: ccmImageFor gives such
 * a cluster 1.30's, one minor older.
 */
const TAGS: Readonly<Record<number, string>> = {
  27: 'v27.1.6',
  28: 'v28.2.1',
  29: 'v29.0.0',
  30: 'v30.0.0',
  32: 'v32.2.5',
  33: 'v33.4.0',
  34: 'v34.2.0',
  35: 'v35.0.2',
};

/** providers/gce/gce_util.go: `^gce://([^/]+)/([^/]+)/([^/]+)$` (project, zone, instance name). */
const PROVIDER_ID = /^gce:\/\/([^/]+)\/([^/]+)\/([^/]+)$/;

export function parseGceProviderID(providerID: string): ProviderInstance | undefined {
  const m = PROVIDER_ID.exec(providerID);
  return m ? { zone: m[2] as string, instanceId: m[3] as string } : undefined;
}

export const GCP: ProviderDetails = {
  ccmCloudProvider: 'gce',
  ccmImages: Object.fromEntries(Object.entries(TAGS).map(([minor, tag]) => [minor, `${REPOSITORY}:${tag}`])),
  namespace: 'kube-system',
  deploymentName: 'cloud-controller-manager',
  containerName: 'cloud-controller-manager',
  leaseName: 'cloud-controller-manager',
  manifest: 'gcp/cloud-controller-manager.yaml',
  cloudConfigFile: 'cloud.config',
  // Optional: without one the CCM reads project and zone from the metadata server.
  cloudConfigRequired: false,
  csiDrivers: ['pd.csi.storage.gke.io'],
  // Exactly one of KCM and CCM may run node IPAM (cloud-provider-gcp config-default.sh, kops). The CCM
  // leaves it to KCM (--controllers=*,-nodeipam, as OpenShift runs it) unless KCM allocated with the
  // CloudAllocator (IP-alias clusters), which needs the in-tree cloud: then the CCM takes it over and KCM
  // stops allocating, with --allocate-node-cidrs=false as kops does ("kcm should not allocate node cidrs
  // with the CloudAllocator if we're using the external CCM"; a flag of its own, unlike its --controllers).
  nodeIpam: {
    ccmFlags: { controllers: '*', 'allocate-node-cidrs': 'true', 'cidr-allocator-type': 'CloudAllocator' },
    kcmFlags: { 'allocate-node-cidrs': 'false' },
  },
  cloudRoutes: true,
  parseProviderID: parseGceProviderID,
};
