/**
 * The vSphere cloud provider interface (CPI, kubernetes/cloud-provider-vsphere). Sources:
 * ../shared/reference/PROVIDER-FACTS.md §4 and ../shared/reference/upstream-manifests/vsphere/
 * cloud-provider-vsphere/releases/v1.29/vsphere-cloud-controller-manager.yaml (60f6c5df).
 */
import type { ProviderDetails, ProviderInstance } from './catalog.ts';

const REPOSITORY = 'registry.k8s.io/cloud-pv-vsphere/cloud-provider-vsphere';

/**
 * Per minor: the highest promoted tag in kubernetes/k8s.io images.yaml @582151cb where that snapshot has
 * one (1.28–1.32), else the tag the upstream releases/v1.NN manifest pins (1.33–1.36). Up to 1.27 the
 * images were on gcr.io (README version matrix).
 */
const IMAGES: Readonly<Record<number, string>> = {
  27: 'gcr.io/cloud-provider-vsphere/cpi/release/manager:v1.27.0',
  28: `${REPOSITORY}:v1.28.1`,
  29: `${REPOSITORY}:v1.29.0`,
  30: `${REPOSITORY}:v1.30.2`,
  31: `${REPOSITORY}:v1.31.1`,
  32: `${REPOSITORY}:v1.32.2`,
  33: `${REPOSITORY}:v1.33.0`,
  34: `${REPOSITORY}:v1.34.0`,
  35: `${REPOSITORY}:v1.35.0`,
  36: `${REPOSITORY}:v1.36.0`,
};

/** The VM's BIOS UUID (pkg/cloudprovider/vsphere/util.go, ProviderPrefix `vsphere://`). */
const PROVIDER_ID = /^vsphere:\/\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

export function parseVsphereProviderID(providerID: string): ProviderInstance | undefined {
  const m = PROVIDER_ID.exec(providerID);
  return m ? { instanceId: (m[1] as string).toLowerCase() } : undefined;
}

export const VSPHERE: ProviderDetails = {
  ccmCloudProvider: 'vsphere',
  ccmImages: IMAGES,
  namespace: 'kube-system',
  deploymentName: 'vsphere-cloud-controller-manager',
  containerName: 'cloud-controller-manager',
  leaseName: 'cloud-controller-manager',
  manifest: 'vsphere/cloud-controller-manager.yaml',
  // CPI reads the legacy INI of the in-tree provider as well as its YAML (docs/book/cloud_config.md).
  cloudConfigFile: 'vsphere.conf',
  cloudConfigRequired: true,
  csiDrivers: ['csi.vsphere.vmware.com'],
  parseProviderID: parseVsphereProviderID,
};
