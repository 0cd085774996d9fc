/**
 * The IBM Cloud cloud-controller-manager (IBM-Cloud/cloud-provider-ibm). IBM never had an in-tree
 * provider (KEP-671): ccm-migrate installs it on clusters external from birth (kubelets already
 * `--cloud-provider=external`, nodes waiting uninitialised without a providerID, which the CCM finds by
 * name), verifies and drift-checks it, and has no in-tree target to go back to. Sources:
 * ../shared/reference/PROVIDER-FACTS.md §6 and ../shared/reference/upstream-manifests/ibm/cloud-provider-ibm/
 * docs/examples/ibm-cloud-controller-manager.yaml (568c208b).
 */
import type { ProviderDetails, ProviderInstance } from './catalog.ts';

const REPOSITORY = 'registry.ng.bluemix.net/armada-master/ibm-cloud-controller-manager';

/** The example tag of each release branch (2024-10 snapshot); 1.32 has only an alpha, 1.33+ nothing. */
const TAGS: Readonly<Record<number, string>> = {
  27: 'v1.27.16-1',
  28: 'v1.28.14-1',
  29: 'v1.29.9-1',
  30: 'v1.30.5-1',
  31: 'v1.31.1-1',
};

/** `ibm://<accountID>///<clusterID>/<workerID>` (ibm/ibm_instances.go). */
const PROVIDER_ID = /^ibm:\/\/([^/]+)\/\/\/([^/]+)\/([^/]+)$/;

export function parseIbmProviderID(providerID: string): ProviderInstance | undefined {
  const m = PROVIDER_ID.exec(providerID);
  return m ? { instanceId: m[3] as string } : undefined;
}

export const IBM: ProviderDetails = {
  ccmCloudProvider: 'ibm',
  ccmImages: Object.fromEntries(Object.entries(TAGS).map(([minor, tag]) => [minor, `${REPOSITORY}:${tag}`])),
  namespace: 'kube-system',
  deploymentName: 'ibm-cloud-controller-manager',
  containerName: 'cloud-controller-manager',
  leaseName: 'cloud-controller-manager',
  manifest: 'ibm/cloud-controller-manager.yaml',
  cloudConfigFile: 'ibm-cloud-config.ini',
  // Account and cluster ids are only there.
  cloudConfigRequired: true,
  // The --cloud-config of IBM's example Deployment (docs/examples/ibm-cloud-controller-manager.yaml).
  cloudConfigHostPath: '/etc/kubernetes/ibm-cloud-config.ini',
  csiDrivers: ['vpc.block.csi.ibm.io'],
  parseProviderID: parseIbmProviderID,
};
