/**
 * The node-ipam controller (kubernetes pkg/controller/nodeipam; cloud-provider-gcp's copy in its CCM), run
 * by whichever controller manager leads with it on: each node without a podCIDR gets one from the
 * leader's `--cluster-cidr`, a /24 (`--node-cidr-mask-size`'s IPv4 default). The RangeAllocator takes the
 * first free one; the CloudAllocator takes the instance's own alias range, which the twin's cloud derives
 * from the node's place, so a KCM and a CCM that hand it over give a node the same range.
 */
import type { TwinContext } from '../context.ts';
import type { KubeObject } from '../store.ts';
import { ipv4ClusterCidr, subnetAt } from './ipv4.ts';
import type { Participant } from './leader-election.ts';
import type { CloudModel } from './model.ts';

const NODE_MASK = 24;

export function podCidrOf(node: KubeObject): string | undefined {
  return (node.spec as { podCIDR?: string } | undefined)?.podCIDR || undefined;
}

/** Give every node without a podCIDR one, from each leader that runs node IPAM (two would both try). */
export function allocatePodCidrs(ctx: TwinContext, cloud: CloudModel, leaders: readonly Participant[]): void {
  for (const leader of leaders) {
    const { nodeIpam, clusterCidr } = leader.network;
    const range = ipv4ClusterCidr(clusterCidr);
    if (!nodeIpam || !range) continue;
    const nodes = ctx.store.list('nodes').items;
    const used = new Set(nodes.flatMap((n) => podCidrOf(n) ?? []));
    let next = 0;
    for (const node of nodes) {
      if (podCidrOf(node)) continue;
      let cidr: string | undefined;
      if (nodeIpam === 'cloud') {
        const place = cloud.placement(node.metadata.name);
        cidr = place && subnetAt(range, place.index, NODE_MASK);
      } else {
        for (cidr = subnetAt(range, next, NODE_MASK); cidr && used.has(cidr); ) {
          cidr = subnetAt(range, ++next, NODE_MASK);
        }
      }
      if (!cidr) continue;
      used.add(cidr);
      try {
        const spec = { ...(node.spec as object), podCIDR: cidr, podCIDRs: [cidr] };
        ctx.store.update('nodes', { ...structuredClone(node), spec });
      } catch {
        // The node changed or went: its next event brings it back.
      }
    }
  }
}
