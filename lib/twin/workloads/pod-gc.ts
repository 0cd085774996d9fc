/**
 * The pod garbage collector's orphan sweep (pkg/controller/podgc): pods bound to a node that no longer
 * exists are deleted, so their controllers replace them elsewhere. The real one waits out a 40 s
 * quarantine in case the node comes back; the twin's nodes do not come back under the same name.
 */
import type { TwinContext } from '../context.ts';
import type { StoreEvent } from '../store.ts';
import type { WorkloadCache } from './cache.ts';
import { WorkQueue } from './queue.ts';
import { NODES, PODS } from './types.ts';

export class PodGarbageCollector {
  readonly #ctx: TwinContext;
  readonly #cache: WorkloadCache;
  readonly #queue: WorkQueue;

  constructor(ctx: TwinContext, cache: WorkloadCache) {
    this.#ctx = ctx;
    this.#cache = cache;
    this.#queue = new WorkQueue('pod-garbage-collector', (node) => this.#sweep(node));
  }

  /** The periodic sweep, once: pods already bound to unknown nodes. */
  start(): void {
    for (const pod of this.#cache.pods.values()) {
      const node = pod.spec.nodeName;
      if (node && !this.#cache.nodes.has(node)) this.#queue.add(node);
    }
  }

  stop(): void {
    this.#queue.stop();
  }

  observe(event: StoreEvent): void {
    if (event.key === NODES && event.type === 'DELETED') this.#queue.add(event.object.metadata.name);
  }

  #sweep(node: string): void {
    if (this.#cache.nodes.has(node)) return;
    for (const pod of this.#cache.podsOnNode(node)) {
      if (pod.metadata.deletionTimestamp) continue;
      this.#ctx.store.delete(PODS, pod.metadata.namespace, pod.metadata.name);
    }
  }
}
