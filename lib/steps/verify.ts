/**
 * Step 6, Verify, once every node was initialised by the CCM (verify-node) and the CCM has its full
 * controller set: no node of the snapshot is gone, none is tainted (a node that joined during the run gets
 * the same bounded wait), every node still carries the providerID and topology labels of the snapshot and
 * the addresses preflight predicted, a CCM leads, LoadBalancer services keep their ingress, and every
 * in-tree volume bound at preflight is still bound to its claim and attached where it was.
 */
import type { V1Node } from '@kubernetes/client-node';
import { VerificationFailedError } from '../errors.ts';
import { call } from '../kube/errors.ts';
import { waitFor } from '../kube/wait.ts';
import { ccmLeaderPoll } from './ccm.ts';
import { hasUninitializedTaint, listNodes, nodeDeletedMessage, nodeName } from './cluster.ts';
import type { StepContext } from './context.ts';
import type { RunIds, Verification } from './schemas.ts';
import type { Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';
import { lostVolumes, observeStorage } from './storage.ts';
import { missingNodes, nodeDrift } from './verify-node.ts';

/** How each node differs from the snapshot in what the CCM owns. */
function driftFromSnapshot(nodes: readonly V1Node[], snapshot: Snapshot): string[] {
  return nodes.flatMap((node) => nodeDrift(node, snapshot.nodes[nodeName(node)]));
}

async function lostIngress(ctx: StepContext, snapshot: Snapshot): Promise<string[]> {
  const services = await call('list services', () => ctx.clients.core.listServiceForAllNamespaces());
  const now = new Map(
    services.items.map((s) => [
      `${s.metadata?.namespace}/${s.metadata?.name}`,
      new Set((s.status?.loadBalancer?.ingress ?? []).map((i) => i.hostname ?? i.ip ?? '')),
    ]),
  );
  return snapshot.loadBalancers.flatMap((lb) => {
    const key = `${lb.namespace}/${lb.name}`;
    const ingress = now.get(key);
    return lb.ingress.filter((i) => !ingress?.has(i)).map((i) => `${key} lost ingress ${i}`);
  });
}

export async function verify(event: RunIds, ctx: StepContext): Promise<Verification> {
  const snapshot = await loadSnapshot(ctx, event);
  const leader = await waitFor('a CCM to hold and renew its lease', ccmLeaderPoll(ctx, snapshot), ctx);
  // A node that joined during the run may still be waiting for the CCM: give it the same bounded wait.
  const nodes = await waitFor(
    'no node to carry the uninitialized taint',
    async () => {
      const all = await listNodes(ctx);
      return !all.some(hasUninitializedTaint) && all;
    },
    ctx,
  );
  const gone = missingNodes(nodes, snapshot);
  if (gone.length > 0) throw new VerificationFailedError(nodeDeletedMessage(gone));
  const problems = [
    ...driftFromSnapshot(nodes, snapshot),
    ...(await lostIngress(ctx, snapshot)),
    ...(snapshot.storage ? lostVolumes(snapshot.storage, await observeStorage(ctx, nodes)) : []),
  ];
  if (problems.length > 0) {
    throw new VerificationFailedError(
      `the cluster differs from its snapshot: ${problems.slice(0, 10).join('; ')}`,
    );
  }
  ctx.progress({ step: 'verify', message: `${nodes.length} nodes initialised by the CCM (${leader})` });
  return {
    nodes: nodes.length,
    cloudController: leader,
    loadBalancers: snapshot.loadBalancers.length,
  };
}
