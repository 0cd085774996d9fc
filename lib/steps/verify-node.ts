/**
 * Step 5, node by node: no Node deleted until the CCM has seen every node. Flipping kubelet on an existing
 * node never adds the uninitialized taint, so nothing shows that the CCM can find the node's instance; and a
 * CCM that cannot (a wrong region or zone in its cloud config, a node name it cannot map, credentials it
 * cannot use) reads that as "does not exist", for which its cloud-node-lifecycle controller deletes a
 * NotReady Node (cloud-provider-vsphere#479, kubernetes#70897). So the CCM runs without that controller
 * until each node, in batches (the Map's maxUnavailable), was tainted `node.cloudprovider.kubernetes.io/
 * uninitialized` and initialised again by the CCM within the KEP-2395 SLO, with the providerID, labels and
 * addresses the in-tree provider gave it. A node it cannot initialise fails the run (and rolls it back),
 * with its taint taken off again: after a rollback no controller would ever clear it.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { DeadlineReachedError, VerificationFailedError } from '../errors.ts';
import { retryOnConflict } from '../kube/conflicts.ts';
import { call, orNotFound } from '../kube/errors.ts';
import { latest, waitFor } from '../kube/wait.ts';
import { UNINITIALIZED_TAINT } from '../kube/well-known.ts';
import { providerFacts } from '../providers/catalog.ts';
import { CCM_LABEL_SELECTOR } from '../providers/render.ts';
import { hasUninitializedTaint, nodeChanges, nodeDeletedMessage, nodeName, readNode } from './cluster.ts';
import type { StepContext } from './context.ts';
import type { NodeEvent } from './schemas.ts';
import type { NodeFacts, Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';

/** KEP-2395: a CCM initialises a new node within 60 s. */
export const NODE_INIT_SLO_MS = 60_000;

const TAINT: V1Taint = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };

/** The snapshot's nodes that `nodes` (every node now) no longer has. */
export function missingNodes(nodes: readonly V1Node[], snapshot: Pick<Snapshot, 'nodes'>): string[] {
  const present = new Set(nodes.map(nodeName));
  return Object.keys(snapshot.nodes).filter((name) => !present.has(name));
}

async function readPresentNode(ctx: StepContext, name: string): Promise<V1Node> {
  const node = await orNotFound(readNode(ctx, name));
  if (!node) throw new VerificationFailedError(nodeDeletedMessage([name]));
  return node;
}

/** Taint a node, guarded by the version read; a node changed meanwhile is read again and tainted again. */
function taintUninitialized(ctx: StepContext, name: string): Promise<void> {
  return retryOnConflict(
    async () => {
      const node = await readPresentNode(ctx, name);
      if (hasUninitializedTaint(node)) return;
      // JSON patch with a resourceVersion test: never overwrite taints someone else changed meanwhile.
      const patch = [
        { op: 'test', path: '/metadata/resourceVersion', value: node.metadata?.resourceVersion },
        node.spec?.taints
          ? { op: 'add', path: '/spec/taints/-', value: TAINT }
          : { op: 'add', path: '/spec/taints', value: [TAINT] },
      ];
      // Deleted between the read and the patch: the same verdict as a deletion seen by the read.
      const patched = await orNotFound(
        call(`taint node ${name} uninitialized`, () =>
          ctx.clients.core.patchNode(
            { name, body: patch },
            setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
          ),
        ),
      );
      if (!patched) throw new VerificationFailedError(nodeDeletedMessage([name]));
    },
    { guardedPatch: true, deadline: ctx.deadline },
  );
}

/**
 * Take the uninitialized taint off a node (gone already: nothing to do). The way back does it too: an
 * in-tree cluster has no controller that would ever clear it.
 */
export function removeUninitializedTaint(ctx: StepContext, name: string): Promise<void> {
  return retryOnConflict(
    async () => {
      const node = await orNotFound(readNode(ctx, name));
      const index = (node?.spec?.taints ?? []).findIndex(
        (t) => t.key === TAINT.key && t.effect === TAINT.effect,
      );
      if (index < 0) return;
      // Guarded like the taint: only the entry we looked at, on the node as we read it.
      const patch = [
        { op: 'test', path: '/metadata/resourceVersion', value: node?.metadata?.resourceVersion },
        { op: 'remove', path: `/spec/taints/${index}` },
      ];
      await call(`remove the uninitialized taint from node ${name}`, () =>
        ctx.clients.core.patchNode(
          { name, body: patch },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        ),
      );
    },
    { guardedPatch: true, deadline: ctx.deadline },
  );
}

/** How a node differs from the snapshot in what the CCM owns: providerID, topology labels, addresses. */
export function nodeDrift(node: V1Node, before: Snapshot['nodes'][string] | undefined): string[] {
  const name = nodeName(node);
  const problems: string[] = [];
  if (!node.spec?.providerID) problems.push(`${name} has no providerID`);
  if (!before) return problems;
  if (before.providerID && node.spec?.providerID !== before.providerID) {
    problems.push(`${name} providerID ${node.spec?.providerID} (was ${before.providerID})`);
  }
  for (const [key, value] of Object.entries(before.labels)) {
    const now = node.metadata?.labels?.[key];
    if (now !== value) problems.push(`${name} label ${key}=${now ?? '(none)'} (was ${value})`);
  }
  problems.push(...addressProblems(name, node, before));
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

/**
 * Where the CCM says why it could not initialise a node: the real cloud-node controller records no event
 * for a failed instance lookup (k8s.io/cloud-provider controllers/node emits only `Synced`), it logs it.
 */
function whereToLook(snapshot: Snapshot, name: string): string {
  const facts = providerFacts(snapshot.provider);
  return facts.nodeManager
    ? `the log of the ${facts.nodeManager.containerName} pod on ${name} (namespace ${facts.namespace})`
    : `the CCM's log: kubectl -n ${facts.namespace} logs -l ${CCM_LABEL_SELECTOR} | grep ${name}`;
}

function notInitialised(snapshot: Snapshot, name: string, limitMs: number, last: V1Node | undefined): string {
  const providerID = last?.spec?.providerID;
  const lookup = providerID ? `its instance by providerID ${providerID}` : 'its instance by node name';
  return `the CCM did not initialise node ${name} within ${limitMs / 1000} s (KEP-2395 SLO ${NODE_INIT_SLO_MS / 1000} s): it still had ${UNINITIALIZED_TAINT}, taken off again. The CCM looks up ${lookup}; a lookup that fails (a wrong region or zone in its cloud config, a node name it cannot map, credentials it cannot use) is reported in ${whereToLook(snapshot, name)}`;
}

export async function verifyNode(event: NodeEvent, ctx: StepContext): Promise<{ initialisedMs: number }> {
  const snapshot = await loadSnapshot(ctx, event);
  const name = event.node;
  // Cut by the invocation's deadline, the CCM had less than its SLO: the retry taints the node again.
  const limitMs = Math.min(ctx.waitMs, NODE_INIT_SLO_MS);
  const started = Date.now();
  await taintUninitialized(ctx, name);
  ctx.progress({
    step: 'verify-node',
    node: name,
    message: 'tainted uninitialized; waiting for the CCM',
    phase: 'uninitialized-taint',
  });
  let last: V1Node | undefined;
  const node = await waitFor(
    `the CCM to initialise node ${name}`,
    async (change) => {
      last = await latest(change, () => orNotFound(readNode(ctx, name)));
      if (!last) throw new VerificationFailedError(nodeDeletedMessage([name]));
      return !hasUninitializedTaint(last) && last;
    },
    { ...ctx, waitMs: limitMs, wakeOn: nodeChanges(ctx, name) },
  ).catch(async (err: unknown) => {
    await removeUninitializedTaint(ctx, name);
    if (err instanceof VerificationFailedError || err instanceof DeadlineReachedError) throw err;
    throw new VerificationFailedError(notInitialised(snapshot, name, limitMs, last));
  });
  const problems = nodeDrift(node, snapshot.nodes[name]);
  if (problems.length > 0) {
    throw new VerificationFailedError(
      `the CCM initialised node ${name} differently from the in-tree provider: ${problems.join('; ')}`,
    );
  }
  const initialisedMs = Date.now() - started;
  ctx.progress({ step: 'verify-node', node: name, message: `initialised by the CCM in ${initialisedMs} ms` });
  return { initialisedMs };
}
