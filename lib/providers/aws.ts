/**
 * The AWS cloud-controller-manager (kubernetes/cloud-provider-aws). Sources: ../shared/reference/
 * PROVIDER-FACTS.md §1 and the manifests under ../shared/reference/upstream-manifests/aws/.
 */
import type { ProviderDetails, ProviderInstance } from './catalog.ts';

const REPOSITORY = 'registry.k8s.io/provider-aws/cloud-controller-manager';

/**
 * The highest promoted patch of each minor: kubernetes/k8s.io
 * registry.k8s.io/images/k8s-staging-provider-aws/images.yaml @0137eda2, image `cloud-controller-manager`
 * (the snapshot PROVIDER-FACTS.md §1 lists from 1.27; 1.25 and 1.26 are from the same file). A git tag
 * alone does not mean a pullable image, so only promoted tags are here: 1.36 has tags but no image yet.
 * The list starts at 1.25, where CSIMigrationAWS went GA: below it, in-tree EBS volumes still need the
 * in-tree provider in kube-controller-manager, so such clusters must upgrade before they migrate.
 */
const PATCHES: Readonly<Record<number, string>> = {
  25: 'v1.25.15',
  26: 'v1.26.14',
  27: 'v1.27.10',
  28: 'v1.28.11',
  29: 'v1.29.10',
  30: 'v1.30.10',
  31: 'v1.31.9',
  32: 'v1.32.8',
  33: 'v1.33.4',
  34: 'v1.34.3',
  35: 'v1.35.2',
};

/** EC2 instance ids (`i-…`) and Fargate pseudo-instances (`fargate-<eni ip>`). */
const INSTANCE_ID = /^(i-|fargate-)[^/]+$/;
const ZONE = /^[a-z0-9-]+$/;

/**
 * Read as cloud-provider-aws reads it (pkg/providers/v1/instances.go, KubernetesInstanceID.
 * MapToAWSInstanceID: url.Parse, then the path's tokens): `aws:///<zone>/<id>` (what the CCM and the
 * in-tree kubelet write), `aws:////<id>` (no zone), and the legacy `aws://<zone>/<id>`, which url.Parse
 * reads with the zone as the host.
 */
export function parseAwsProviderID(providerID: string): ProviderInstance | undefined {
  const prefix = 'aws://';
  if (!providerID.startsWith(prefix)) return undefined;
  const rest = providerID.slice(prefix.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return undefined;
  const host = rest.slice(0, slash);
  const tokens = rest
    .slice(slash)
    .replace(/^\/+|\/+$/g, '')
    .split('/');
  let zone: string | undefined;
  let instanceId: string;
  if (tokens.length === 1) {
    instanceId = tokens[0] as string;
    zone = host || undefined;
  } else if (tokens.length === 2 && host === '') {
    [zone, instanceId] = tokens as [string, string];
  } else {
    return undefined;
  }
  if (!INSTANCE_ID.test(instanceId) || (zone !== undefined && !ZONE.test(zone))) return undefined;
  return zone === undefined ? { instanceId } : { zone, instanceId };
}

export const AWS: ProviderDetails = {
  ccmCloudProvider: 'aws',
  ccmImages: Object.fromEntries(
    Object.entries(PATCHES).map(([minor, tag]) => [minor, `${REPOSITORY}:${tag}`]),
  ),
  namespace: 'kube-system',
  // The name upstream's DaemonSet, kops and OpenShift all use, so operators find it where they expect.
  deploymentName: 'aws-cloud-controller-manager',
  containerName: 'cloud-controller-manager',
  // The CCM's default --leader-elect-resource-name (PROVIDER-FACTS.md §0.2).
  leaseName: 'cloud-controller-manager',
  manifest: 'aws/cloud-controller-manager.yaml',
  cloudConfigFile: 'cloud.conf',
  // VPC route table entries for node podCIDRs (kubenet); pkg/providers/v1/aws_routes.go.
  cloudRoutes: true,
  csiDrivers: ['ebs.csi.aws.com'],
  parseProviderID: parseAwsProviderID,
};
