/**
 * The route controller (k8s.io/cloud-provider controllers/route), run by whichever controller manager runs
 * the cloud loops with it on: every node with a podCIDR in the cluster CIDR and an instance gets a route
 * to it in the cloud's route table, and a route of the cluster CIDR whose node is gone, or has another
 * range now, is deleted. While none runs, the routes stay as they are and new nodes get none: pods on them
 * are unreachable from other nodes.
 */
import type { TwinContext } from '../context.ts';
import { contains, ipv4ClusterCidr } from './ipv4.ts';
import type { Participant } from './leader-election.ts';
import type { CloudModel } from './model.ts';
import { instanceOf } from './node-init.ts';
import { podCidrOf } from './node-ipam.ts';

export function reconcileRoutes(ctx: TwinContext, cloud: CloudModel, runners: readonly Participant[]): void {
  if (!cloud.supportsRoutes) return;
  for (const runner of runners) {
    const range = runner.network.routes ? ipv4ClusterCidr(runner.network.clusterCidr) : undefined;
    if (!range) continue;
    const wanted = new Map<string, { node: string; instanceId: string }>();
    for (const node of ctx.store.list('nodes').items) {
      const cidr = podCidrOf(node);
      const instance = instanceOf(cloud, node);
      if (cidr && instance && contains(range, cidr)) {
        wanted.set(cidr, { node: node.metadata.name, instanceId: instance.id });
      }
    }
    for (const route of cloud.routes()) {
      const want = wanted.get(route.destinationCidr);
      if (contains(range, route.destinationCidr) && want?.node !== route.node) {
        cloud.deleteRoute(route.destinationCidr);
      }
    }
    const have = new Map(cloud.routes().map((r) => [r.destinationCidr, r]));
    for (const [destinationCidr, want] of wanted) {
      if (have.get(destinationCidr)?.instanceId !== want.instanceId) {
        cloud.createRoute({ destinationCidr, ...want });
      }
    }
  }
}
