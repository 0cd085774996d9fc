/**
 * Step 6, Verify. Flipping kubelet on an existing node never adds the uninitialized taint, so "no taints"
 * alone proves nothing: a canary node is tainted and the CCM must clear it within the KEP-2395 SLO (60 s).
 * Then every node must still carry the providerID and topology labels of the snapshot and the addresses
 * preflight predicted (an address neither there before nor predicted rolls back), none may be tainted, a CCM must lead, and LoadBalancer services must keep their ingress.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { DeadlineReachedError, VerificationFailedError } from '../errors.ts';
import { retryOnConflict } from '../kube/conflicts.ts';
import { call } from '../kube/errors.ts';
import { latest, waitFor } from '../kube/wait.ts';
import { UNINITIALIZED_TAINT } from '../kube/well-known.ts';
import { ccmLeaderPoll } from './ccm.ts';
import { hasUninitializedTaint, listNodes, nodeChanges, nodeName, readNode } from './cluster.ts';
import type { StepContext } from './context.ts';
import type { RunIds, Verification } from './schemas.ts';
import type { NodeFacts, Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';

/** KEP-2395: a CCM initialises a new node within 60 s. */
export const CANARY_SLO_MS = 60_000;

const CANARY_TAINT: V1Taint = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };

/** Taint the canary, guarded by the version read; a node changed meanwhile is read again and tainted again. */
function taintCanary(ctx: StepContext, name: string): Promise<void> {
  return retryOnConflict(
    async () => {
      const node = await readNode(ctx, name);
      if (hasUninitializedTaint(node)) return;
      // JSON patch with a resourceVersion test: never overwrite taints someone else changed meanwhile.
      const patch = [
        { op: 'test', path: '/metadata/resourceVersion', value: node.metadata?.resourceVersion },
        node.spec?.taints
          ? { op: 'add', path: '/spec/taints/-', value: CANARY_TAINT }
          : { op: 'add', path: '/spec/taints', value: [CANARY_TAINT] },
      ];
      await call(`taint canary node ${name}`, () =>
        ctx.clients.core.patchNode(
          { name, body: patch },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        ),
      );
    },
    { guardedPatch: true, deadline: ctx.deadline },
  );
}

async function canaryCheck(
  ctx: StepContext,
  snapshot: Snapshot,
  wanted: string | undefined,
): Promise<{ canary: string; clearedMs: number }> {
  const workers = Object.entries(snapshot.nodes).filter(([, n]) => n.role === 'worker');
  const canary = wanted ?? (workers[0] ?? Object.entries(snapshot.nodes)[0])?.[0];
  if (!canary) throw new VerificationFailedError('the snapshot lists no node to use as a canary');
  const started = Date.now();
  await taintCanary(ctx, canary);
  ctx.progress({
    step: 'verify',
    node: canary,
    message: 'canary tainted uninitialized; waiting for the CCM',
  });
  await waitFor(
    `the CCM to initialise canary node ${canary}`,
    async (change) => {
      const node = await latest(change, () => readNode(ctx, canary));
      return node !== undefined && !hasUninitializedTaint(node);
    },
    { ...ctx, waitMs: Math.min(ctx.waitMs, CANARY_SLO_MS), wakeOn: nodeChanges(ctx, canary) },
  ).catch(async (err: unknown) => {
    // Our taint must not outlive the check: after a rollback no controller would ever clear it.
    await untaintCanary(ctx, canary);
    // Cut by the invocation's deadline, the CCM had less than its SLO: the retry taints the canary again.
    if (err instanceof VerificationFailedError || err instanceof DeadlineReachedError) throw err;
    throw new VerificationFailedError(
      `the CCM did not initialise canary node ${canary} within ${CANARY_SLO_MS / 1000} s (KEP-2395 SLO): it still had ${UNINITIALIZED_TAINT}`,
    );
  });
  return { canary, clearedMs: Date.now() - started };
}

function untaintCanary(ctx: StepContext, name: string): Promise<void> {
  return retryOnConflict(
    async () => {
      const node = await readNode(ctx, name);
      const index = (node.spec?.taints ?? []).findIndex(
        (t) => t.key === CANARY_TAINT.key && t.effect === CANARY_TAINT.effect,
      );
      if (index < 0) return;
      // Guarded like the taint: only the entry we looked at, on the node as we read it.
      const patch = [
        { op: 'test', path: '/metadata/resourceVersion', value: node.metadata?.resourceVersion },
        { op: 'remove', path: `/spec/taints/${index}` },
      ];
      await call(`remove the canary taint from node ${name}`, () =>
        ctx.clients.core.patchNode(
          { name, body: patch },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        ),
      );
    },
    { guardedPatch: true, deadline: ctx.deadline },
  );
}

/** How each node differs from the snapshot in what the CCM owns: providerID, topology labels, addresses. */
function driftFromSnapshot(nodes: readonly V1Node[], snapshot: Snapshot): string[] {
  const problems: string[] = [];
  for (const node of nodes) {
    const name = nodeName(node);
    const before = snapshot.nodes[name];
    if (!node.spec?.providerID) problems.push(`${name} has no providerID`);
    if (!before) continue;
    if (before.providerID && node.spec?.providerID !== before.providerID) {
      problems.push(`${name} providerID ${node.spec?.providerID} (was ${before.providerID})`);
    }
    for (const [key, value] of Object.entries(before.labels)) {
      const now = node.metadata?.labels?.[key];
      if (now !== value) problems.push(`${name} label ${key}=${now ?? '(none)'} (was ${value})`);
    }
    problems.push(...addressProblems(name, node, before));
  }
  return problems;
}

/**
 * A node's addresses against the snapshot's: any address neither there before nor predicted is unexpected,
 * and one both there before and predicted must stay. A predicted change may not have happened yet (the CCM
 * revisits initialised nodes every --node-status-update-frequency), so the addresses before still pass.
 */
function addressProblems(name: string, node: V1Node, before: NodeFacts): string[] {
  const key = (a: { type: string; address: string }) => `${a.type} ${a.address}`;
  const now = new Set((node.status?.addresses ?? []).map(key));
  const had = new Set(before.addresses.map(key));
  const predicted = new Set((before.predictedAddresses ?? before.addresses).map(key));
  return [
    ...[...had].filter((a) => predicted.has(a) && !now.has(a)).map((a) => `${name} lost address ${a}`),
    ...[...now]
      .filter((a) => !had.has(a) && !predicted.has(a))
      .map((a) => `${name} gained address ${a}, which the prediction did not expect`),
  ];
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

/** `canary`: the node to taint (a drift remediation names one it flipped); by default the first worker. */
export async function verify(event: RunIds & { canary?: string }, ctx: StepContext): Promise<Verification> {
  const snapshot = await loadSnapshot(ctx, event);
  const leader = await waitFor('a CCM to hold and renew its lease', ccmLeaderPoll(ctx, snapshot), ctx);
  const { canary, clearedMs } = await canaryCheck(ctx, snapshot, event.canary);
  // A node that joined during the run may still be waiting for the CCM: give it the same bounded wait.
  const nodes = await waitFor(
    'no node to carry the uninitialized taint',
    async () => {
      const all = await listNodes(ctx);
      return !all.some(hasUninitializedTaint) && all;
    },
    ctx,
  );
  const problems = [...driftFromSnapshot(nodes, snapshot), ...(await lostIngress(ctx, snapshot))];
  if (problems.length > 0) {
    throw new VerificationFailedError(
      `the cluster differs from its snapshot: ${problems.slice(0, 10).join('; ')}`,
    );
  }
  ctx.progress({
    step: 'verify',
    message: `${nodes.length} nodes initialised by the CCM (${leader}); canary cleared in ${clearedMs} ms`,
  });
  return {
    nodes: nodes.length,
    canary,
    canaryClearedMs: clearedMs,
    cloudController: leader,
    loadBalancers: snapshot.loadBalancers.length,
  };
}
