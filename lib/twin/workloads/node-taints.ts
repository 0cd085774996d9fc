/**
 * The node lifecycle controller's NoSchedule tainting pass (pkg/controller/nodelifecycle,
 * doNoScheduleTaintingPass): a node whose Ready condition is False carries node.kubernetes.io/not-ready,
 * Unknown node.kubernetes.io/unreachable, and a cordoned one node.kubernetes.io/unschedulable, all
 * NoSchedule; each goes once its cause has. kube-apiserver's TaintNodesByCondition admission puts the
 * not-ready taint on every new Node, so on a real server no pod lands on a node before this pass has seen
 * it Ready. (The NoExecute taints of taint-based eviction only act after the 300 s tolerations that
 * DefaultTolerationSeconds gives every pod: longer than the twin's runs, so not modelled.)
 */
import type { TwinContext } from '../context.ts';
import type { StoreEvent } from '../store.ts';
import type { WorkloadCache } from './cache.ts';
import { findCondition } from './objects.ts';
import { TAINT_NOT_READY, TAINT_UNSCHEDULABLE } from './placement.ts';
import { WorkQueue } from './queue.ts';
import { NODES, type Node, type Taint } from './types.ts';

export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
const MANAGED = new Set([TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_UNSCHEDULABLE]);

/** The condition taints this node should carry now. */
function wantedTaints(node: Node): Taint[] {
  const wanted: Taint[] = [];
  const ready = findCondition(node.status?.conditions, 'Ready')?.status;
  if (ready === 'False') wanted.push({ key: TAINT_NOT_READY, effect: 'NoSchedule' });
  if (ready === 'Unknown') wanted.push({ key: TAINT_UNREACHABLE, effect: 'NoSchedule' });
  if (node.spec?.unschedulable) wanted.push({ key: TAINT_UNSCHEDULABLE, effect: 'NoSchedule' });
  return wanted;
}

const isManagedNoSchedule = (t: Taint): boolean => MANAGED.has(t.key) && t.effect === 'NoSchedule';

export class NodeConditionTaints {
  readonly #ctx: TwinContext;
  readonly #cache: WorkloadCache;
  readonly #queue: WorkQueue;

  constructor(ctx: TwinContext, cache: WorkloadCache) {
    this.#ctx = ctx;
    this.#cache = cache;
    this.#queue = new WorkQueue('node-lifecycle-taints', (name) => this.#sync(name));
  }

  start(): void {
    for (const name of this.#cache.nodes.keys()) this.#queue.add(name);
  }

  stop(): void {
    this.#queue.stop();
  }

  observe(event: StoreEvent): void {
    if (event.key === NODES && event.type !== 'DELETED') this.#queue.add(event.object.metadata.name);
  }

  #sync(name: string): void {
    const node = this.#cache.nodes.get(name);
    if (!node) return;
    const current = node.spec?.taints ?? [];
    const wanted = wantedTaints(node);
    const kept = current.filter((t) => !isManagedNoSchedule(t) || wanted.some((w) => w.key === t.key));
    const added = wanted.filter((w) => !current.some((t) => t.key === w.key && t.effect === w.effect));
    if (added.length === 0 && kept.length === current.length) return;
    const timeAdded = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const taints = [...kept, ...added.map((t) => ({ ...t, timeAdded }))];
    this.#ctx.store.update(NODES, { ...node, spec: { ...node.spec, taints } });
  }
}
