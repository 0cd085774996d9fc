/**
 * The Azure cloud-controller-manager and its cloud-node-manager (kubernetes-sigs/cloud-provider-azure).
 * Sources: ../shared/reference/PROVIDER-FACTS.md §2 and ../shared/reference/upstream-manifests/azure/
 * cloud-provider-azure/examples/out-of-tree/{cloud-controller-manager,cloud-node-manager}.yaml (7b31c76c).
 */
import type { ProviderDetails, ProviderInstance } from './catalog.ts';

/**
 * The helm chart's pick per minor (helm/cloud-provider-azure/templates/cloud-provider-azure.yaml at HEAD,
 * PROVIDER-FACTS.md §2): the "known published" column. The chart uses one tag for both images.
 */
const TAGS: Readonly<Record<number, string>> = {
  27: 'v1.27.21',
  28: 'v1.28.14',
  29: 'v1.29.15',
  30: 'v1.30.15',
  31: 'v1.31.12',
  32: 'v1.32.17',
  33: 'v1.33.12',
  34: 'v1.34.9',
  35: 'v1.35.4',
  36: 'v1.36.0',
};

/** MCR moved the images under oss/v2 from Kubernetes 1.32 (the chart switches at `ge Minor "32"`). */
function imagesOf(name: string): Record<number, string> {
  return Object.fromEntries(
    Object.entries(TAGS).map(([minor, tag]) => {
      const registry =
        Number(minor) >= 32 ? 'mcr.microsoft.com/oss/v2/kubernetes' : 'mcr.microsoft.com/oss/kubernetes';
      return [minor, `${registry}/${name}:${tag}`];
    }),
  );
}

/** A VM (availability set or VMSS Flex) or a VMSS uniform instance; Azure resource ids ignore case. */
const PROVIDER_ID =
  /^azure:\/\/\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/(?:virtualMachineScaleSets\/([^/]+)\/)?virtualMachines\/([^/]+)$/i;

/**
 * `azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<vm>`, or
 * `…/virtualMachineScaleSets/<vmss>/virtualMachines/<n>` whose VM is named `<vmss>_<n>` (PROVIDER-FACTS §2).
 */
export function parseAzureProviderID(providerID: string): ProviderInstance | undefined {
  const m = PROVIDER_ID.exec(providerID);
  if (!m) return undefined;
  const [, , , scaleSet, vm] = m as unknown as [string, string, string, string | undefined, string];
  return { instanceId: scaleSet === undefined ? vm : `${scaleSet}_${vm}` };
}

export const AZURE: ProviderDetails = {
  ccmCloudProvider: 'azure',
  ccmImages: imagesOf('azure-cloud-controller-manager'),
  namespace: 'kube-system',
  deploymentName: 'cloud-controller-manager',
  containerName: 'cloud-controller-manager',
  leaseName: 'cloud-controller-manager',
  manifest: 'azure/cloud-controller-manager.yaml',
  cloudConfigFile: 'azure.json',
  // Credentials, subscription and resource group live only there: the CCM cannot start without it.
  cloudConfigRequired: true,
  // Route table entries for node podCIDRs (kubenet); pkg/provider/azure_routes.go.
  cloudRoutes: true,
  csiDrivers: ['disk.csi.azure.com', 'file.csi.azure.com'],
  nodeControllerFlags: false,
  // The CCM runs --controllers=*,-cloud-node: this DaemonSet initialises the nodes.
  nodeManager: {
    daemonSetName: 'cloud-node-manager',
    containerName: 'cloud-node-manager',
    images: imagesOf('azure-cloud-node-manager'),
  },
  parseProviderID: parseAzureProviderID,
};
