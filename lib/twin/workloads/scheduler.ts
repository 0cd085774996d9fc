/**
 * kube-scheduler, reduced to what the twin's workloads need: it binds each pending pod to a node that
 * passes the default filters in their real order (NodeUnschedulable, TaintToleration, NodeAffinity) and,
 * among those, has the fewest pods (ties by name). A pod that fits nowhere gets PodScheduled=False
 * reason Unschedulable with the scheduler's FitError message, and is tried again when a node changes in a
 * way that could make it fit (the scheduling queue's move-on-node-event).
 *
 * A node that is not Ready carries the node lifecycle controller's not-ready or unreachable taint
 * (node-taints.ts), so only pods tolerating it land there.
 */
import type { TwinContext } from '../context.ts';
import type { StoreEvent } from '../store.ts';
import type { WorkloadCache } from './cache.ts';
import type { EventRecorder } from './events.ts';
import { findCondition, isNodeReady, isPodTerminal, keyOf, splitKey, withCondition } from './objects.ts';
import {
  matchesNodeSelectorAndAffinity,
  nodeNamesRequired,
  TAINT_UNSCHEDULABLE,
  untoleratedTaint,
} from './placement.ts';
import { WorkQueue } from './queue.ts';
import { NODES, type Node, PODS, type Pod, type Taint } from './types.ts';

const COMPONENT = 'default-scheduler';

/** Filter failure reasons, as the plugins word them (pkg/scheduler/framework/plugins). */
const REASON_UNSCHEDULABLE = 'node(s) were unschedulable';
const REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector";
/** What the NodeUnschedulable plugin checks tolerations of on a cordoned node. */
const UNSCHEDULABLE_TAINT: Taint = { key: TAINT_UNSCHEDULABLE, effect: 'NoSchedule' };

function needsScheduling(pod: Pod): boolean {
  return (
    !pod.spec.nodeName &&
    !pod.metadata.deletionTimestamp &&
    !isPodTerminal(pod) &&
    (pod.spec.schedulerName ?? COMPONENT) === COMPONENT
  );
}

/** What of a node can change whether a pod fits it. */
function schedulingSignature(node: Node): string {
  return JSON.stringify([
    node.metadata.labels,
    node.spec?.taints,
    node.spec?.unschedulable ?? false,
    isNodeReady(node),
  ]);
}

/** Why the node cannot take the pod, or undefined when it can. */
function filterNode(pod: Pod, node: Node): string | undefined {
  if (node.spec?.unschedulable && untoleratedTaint([UNSCHEDULABLE_TAINT], pod.spec.tolerations)) {
    return REASON_UNSCHEDULABLE;
  }
  const taint = untoleratedTaint(node.spec?.taints ?? [], pod.spec.tolerations);
  if (taint) return `node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`;
  if (!matchesNodeSelectorAndAffinity(pod.spec, node)) return REASON_AFFINITY;
  return undefined;
}

/**
 * FitError.Error(): "0/3 nodes are available: 3 node(s) had untolerated taint {k: v}. preemption: …",
 * one reason per node (the first filter it fails), counted and sorted. Preemption never helps here: the
 * twin models no priorities. With no nodes at all the scheduler says ErrNoNodesAvailable instead.
 */
function fitErrorMessage(total: number, reasons: Map<string, number>): string {
  if (total === 0) return 'no nodes available to schedule pods';
  const counted = [...reasons].map(([reason, n]) => `${n} ${reason}`).sort();
  const head = `0/${total} nodes are available`;
  return `${head}: ${counted.join(', ')}. preemption: ${head}: ${total} Preemption is not helpful for scheduling..`;
}

export class Scheduler {
  readonly #ctx: TwinContext;
  readonly #cache: WorkloadCache;
  readonly #events: EventRecorder;
  readonly #queue: WorkQueue;
  /** Pods that fit nowhere, with the nodes they are limited to (undefined: any node). */
  readonly #unschedulable = new Map<string, ReadonlySet<string> | undefined>();
  readonly #signatures = new Map<string, string>();

  constructor(ctx: TwinContext, cache: WorkloadCache, events: EventRecorder) {
    this.#ctx = ctx;
    this.#cache = cache;
    this.#events = events;
    this.#queue = new WorkQueue(COMPONENT, (key) => this.#sync(key));
  }

  start(): void {
    for (const node of this.#cache.nodes.values()) {
      this.#signatures.set(node.metadata.name, schedulingSignature(node));
    }
    for (const [key, pod] of this.#cache.pods) if (needsScheduling(pod)) this.#queue.add(key);
  }

  stop(): void {
    this.#queue.stop();
  }

  observe(event: StoreEvent): void {
    if (event.key === PODS) {
      const key = keyOf(event.object);
      if (event.type !== 'DELETED' && needsScheduling(event.object as Pod)) {
        this.#queue.add(key);
      } else {
        this.#unschedulable.delete(key);
        if (event.type === 'DELETED') this.#queue.forget(key);
      }
    } else if (event.key === NODES) {
      const name = event.object.metadata.name;
      const signature = event.type === 'DELETED' ? undefined : schedulingSignature(event.object as Node);
      if (signature === this.#signatures.get(name)) return;
      if (signature === undefined) this.#signatures.delete(name);
      else this.#signatures.set(name, signature);
      if (signature === undefined) return;
      for (const [key, nodes] of this.#unschedulable) {
        if (!nodes || nodes.has(name)) this.#queue.add(key);
      }
    }
  }

  #sync(key: string): void {
    const pod = this.#cache.pods.get(key);
    if (!pod || !needsScheduling(pod)) {
      this.#unschedulable.delete(key);
      return;
    }
    const allowed = nodeNamesRequired(pod.spec);
    // Nodes outside a by-name affinity fail NodeAffinity; only the named ones need a look.
    const candidates: Iterable<Node> = allowed
      ? [...allowed].flatMap((n) => this.#cache.nodes.get(n) ?? [])
      : this.#cache.nodes.values();
    const reasons = new Map<string, number>();
    if (allowed) {
      const elsewhere = this.#cache.nodes.size - [...allowed].filter((n) => this.#cache.nodes.has(n)).length;
      if (elsewhere > 0) reasons.set(REASON_AFFINITY, elsewhere);
    }
    let best: Node | undefined;
    let bestCount = Infinity;
    for (const node of candidates) {
      const reason = filterNode(pod, node);
      if (reason) {
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
        continue;
      }
      const name = node.metadata.name;
      const count = this.#cache.podCount(name);
      if (count < bestCount || (count === bestCount && best && name < best.metadata.name)) {
        best = node;
        bestCount = count;
      }
    }
    if (best) {
      this.#unschedulable.delete(key);
      this.#bind(pod, best.metadata.name);
    } else {
      this.#unschedulable.set(key, allowed);
      this.#markUnschedulable(pod, fitErrorMessage(this.#cache.nodes.size, reasons));
    }
  }

  /** Bind through the pods/binding subresource, as kube-scheduler does: spec.nodeName, PodScheduled=True. */
  #bind(pod: Pod, node: string): void {
    const bound = this.#ctx.store.bind(pod.metadata.namespace ?? 'default', pod.metadata.name, node) as Pod;
    const { namespace, name } = splitKey(keyOf(pod));
    this.#events.record(
      COMPONENT,
      bound,
      'Normal',
      'Scheduled',
      `Successfully assigned ${namespace}/${name} to ${node}`,
    );
  }

  #markUnschedulable(pod: Pod, message: string): void {
    const current = findCondition(pod.status?.conditions, 'PodScheduled');
    if (current?.status === 'False' && current.message === message) return;
    const conditions = withCondition(
      pod.status?.conditions,
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastProbeTime: null },
      Date.now(),
    );
    const updated = this.#ctx.store.update(
      PODS,
      { ...pod, status: { phase: 'Pending', ...pod.status, conditions } },
      { subresource: 'status' },
    );
    this.#events.record(COMPONENT, updated, 'Warning', 'FailedScheduling', message);
  }
}
