/**
 * What kube-controller-manager does with node pod CIDRs and cloud routes, read from its effective flags,
 * and what the CCM and kube-controller-manager must then run so that the cluster keeps doing it after the
 * move (exactly one of them per controller: two node IPAMs or two route controllers would fight).
 *
 * Upstream behaviour relied on (kubernetes/kubernetes):
 * - defaults (k8s.io/cloud-provider config/v1alpha1 KubeCloudShared, shared by KCM and CCM):
 *   `--allocate-node-cidrs=false`, `--configure-cloud-routes=true`, `--cidr-allocator-type=RangeAllocator`;
 * - KCM's node-route-controller (alias `route`) runs only with `--allocate-node-cidrs` and
 *   `--configure-cloud-routes` and an in-tree cloud whose Routes() answers
 *   (cmd/kube-controller-manager/app/core.go startNodeRouteController); with `--cloud-provider=external` it
 *   has no cloud and runs nothing, so after the move only the CCM can program routes;
 * - a CCM's route controller depends on `--configure-cloud-routes` alone since 1.21 (#97029,
 *   k8s.io/cloud-provider app/core.go startRouteController) and needs a valid `--cluster-cidr` (else the CCM
 *   exits: "invalid CIDR[0]"), so the flag is always rendered explicitly;
 * - KCM's node-ipam-controller (alias `nodeipam`) runs with `--allocate-node-cidrs`; its RangeAllocator needs
 *   no cloud and stays in KCM, while its CloudAllocator with no in-tree cloud fails KCM's start ("--cidr-
 *   allocator-type is set to 'CloudAllocator' but cloud provider is not configured", same file), so that
 *   node IPAM must move to a CCM that runs one (cloud-provider-gcp cmd/cloud-controller-manager/
 *   nodeipamcontroller.go: it needs `--allocate-node-cidrs` and `--cluster-cidr`).
 */
import * as z from 'zod';
import { booleanFlag } from '../controlplane/flags.ts';
import { PreflightFailedError } from '../errors.ts';
import type { ProviderFacts } from './catalog.ts';

const CIDR_LIST = z.string().regex(/^[0-9a-fA-F.:/,]+$/, 'a CIDR list');

export const NodeNetworkSchema = z.object({
  /** KCM's route controller programmed a cloud route for each node's podCIDR: the CCM's must take over. */
  cloudRoutes: z.boolean(),
  /**
   * Who allocates node podCIDRs: nobody (a CNI does), KCM's RangeAllocator (stays in KCM), or KCM's
   * CloudAllocator (moves to the CCM).
   */
  nodeIpam: z.enum(['none', 'range', 'cloud']),
  /** KCM's --cluster-cidr, given to the CCM when it programs routes or allocates CIDRs. */
  clusterCidr: CIDR_LIST.optional(),
});
export type NodeNetwork = z.infer<typeof NodeNetworkSchema>;

/**
 * Whether `--controllers` (absent: `*`) enables a controller known by any of `names` (its name and alias),
 * as k8s.io/controller-manager IsControllerEnabled reads it: an explicit name or `-name` first, else `*`.
 */
export function controllerEnabled(controllers: string | undefined, names: readonly string[]): boolean {
  let star = false;
  for (const item of (controllers ?? '*').split(',').map((c) => c.trim())) {
    if (names.includes(item)) return true;
    if (names.some((n) => item === `-${n}`)) return false;
    if (item === '*') star = true;
  }
  return star;
}

/**
 * What a kube-controller-manager with these cloud flags does with node CIDRs and routes. A CloudAllocator
 * that no CCM of the provider can take over is refused: after the move KCM would not start with it, and
 * no one would allocate.
 */
export function kcmNodeNetwork(facts: ProviderFacts, flags: Readonly<Record<string, string>>): NodeNetwork {
  const parsed = new Map(Object.entries(flags));
  const inTree = facts.inTreeName !== undefined && flags['cloud-provider'] === facts.inTreeName;
  const allocates = booleanFlag(parsed, 'allocate-node-cidrs', false);
  const ipam =
    allocates && controllerEnabled(flags.controllers, ['node-ipam-controller', 'nodeipam'])
      ? flags['cidr-allocator-type'] === 'CloudAllocator'
        ? 'cloud'
        : 'range'
      : 'none';
  const cloudRoutes =
    inTree &&
    facts.cloudRoutes === true &&
    allocates &&
    booleanFlag(parsed, 'configure-cloud-routes', true) &&
    controllerEnabled(flags.controllers, ['node-route-controller', 'route']);
  const clusterCidr = flags['cluster-cidr']?.trim();
  if (ipam === 'cloud' && facts.nodeIpam === undefined) {
    throw new PreflightFailedError(
      `kube-controller-manager allocates node CIDRs with --cidr-allocator-type=CloudAllocator, which it cannot run without an in-tree cloud provider, and the ${facts.displayName} cloud-controller-manager has no node IPAM to take it over`,
    );
  }
  if ((cloudRoutes || ipam === 'cloud') && !clusterCidr) {
    throw new PreflightFailedError(
      `kube-controller-manager ${cloudRoutes ? 'programs cloud routes' : 'allocates node CIDRs'} without --cluster-cidr: the cloud-controller-manager would not start with none`,
    );
  }
  return {
    cloudRoutes,
    nodeIpam: ipam,
    ...(clusterCidr && (cloudRoutes || ipam === 'cloud') ? { clusterCidr } : {}),
  };
}

/** The CCM flags that carry `network` over (on top of its asset's): routes always said explicitly. */
export function ccmNodeNetworkFlags(
  facts: ProviderFacts,
  network: NodeNetwork | undefined,
): Record<string, string> {
  const flags: Record<string, string> = { 'configure-cloud-routes': String(network?.cloudRoutes ?? false) };
  if (network?.nodeIpam === 'cloud') Object.assign(flags, facts.nodeIpam?.ccmFlags);
  if (network?.clusterCidr !== undefined) flags['cluster-cidr'] = network.clusterCidr;
  return flags;
}

/** The KCM flags the move changes for `network`: none, unless its node IPAM moves to the CCM. */
export function kcmNodeNetworkFlags(
  facts: ProviderFacts,
  network: NodeNetwork | undefined,
): Readonly<Record<string, string>> {
  return network?.nodeIpam === 'cloud' ? (facts.nodeIpam?.kcmFlags ?? {}) : {};
}

/**
 * What a deployed CCM's flags carried over (plan on a migrated cluster, whose external KCM no longer shows
 * it); `kcm` is what KCM shows now: where the CCM allocates nothing, KCM's own node IPAM.
 */
export function ccmNodeNetwork(
  flags: ReadonlyMap<string, string>,
  kcm: NodeNetwork | undefined,
): NodeNetwork {
  const cloudRoutes = booleanFlag(flags, 'configure-cloud-routes', true);
  const cloudIpam =
    booleanFlag(flags, 'allocate-node-cidrs', false) && flags.get('cidr-allocator-type') === 'CloudAllocator';
  const clusterCidr = flags.get('cluster-cidr');
  return {
    cloudRoutes,
    nodeIpam: cloudIpam ? 'cloud' : (kcm?.nodeIpam ?? 'none'),
    ...(clusterCidr && (cloudRoutes || cloudIpam) ? { clusterCidr } : {}),
  };
}
