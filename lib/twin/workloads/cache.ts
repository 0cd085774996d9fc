/**
 * What the controllers' informers would hold: every node and pod, indexed the way the controllers look
 * them up (pods by controlling owner, non-terminated pods per node). Kept current from the store's events,
 * so a sync never lists the store. Objects are the store's own frozen objects: the cache costs references.
 */
import type { ClusterStore, KubeObject, StoreEvent } from '../store.ts';
import { controllerUid, isPodTerminal, keyOf } from './objects.ts';
import { NODES, type Node, PODS, type Pod } from './types.ts';

export class WorkloadCache {
  readonly nodes = new Map<string, Node>();
  readonly pods = new Map<string, Pod>();
  readonly #byController = new Map<string, Set<string>>();
  /** Non-terminated pods bound to each node (what the scheduler spreads by). */
  readonly #countOnNode = new Map<string, number>();
  readonly #podsOnNode = new Map<string, Set<string>>();
  /** Order in which pods were first seen: "newest first" without relying on second-precision timestamps. */
  readonly #seen = new Map<string, number>();
  #sequence = 0;

  /** Fill from the store, as an informer's initial list. */
  load(store: ClusterStore): void {
    for (const node of store.list(NODES).items) this.nodes.set(node.metadata.name, node as Node);
    for (const pod of store.list(PODS).items) this.#setPod(keyOf(pod), pod as Pod);
  }

  /** Apply a store event; returns the object as it was before it. */
  apply(event: StoreEvent): KubeObject | undefined {
    if (event.key === NODES) {
      const name = event.object.metadata.name;
      const previous = this.nodes.get(name);
      if (event.type === 'DELETED') this.nodes.delete(name);
      else this.nodes.set(name, event.object as Node);
      return previous;
    }
    if (event.key === PODS) {
      const key = keyOf(event.object);
      const previous = this.pods.get(key);
      if (previous) this.#unindex(key, previous);
      if (event.type === 'DELETED') {
        this.pods.delete(key);
        this.#seen.delete(key);
      } else {
        this.#setPod(key, event.object as Pod);
      }
      return previous;
    }
    return undefined;
  }

  /** Pods whose controlling ownerReference has this uid. */
  podsOf(ownerUid: string | undefined): Pod[] {
    const keys = ownerUid ? this.#byController.get(ownerUid) : undefined;
    return keys ? [...keys].map((k) => this.pods.get(k) as Pod) : [];
  }

  /** Pods bound to a node (any phase). */
  podsOnNode(node: string): Pod[] {
    const keys = this.#podsOnNode.get(node);
    return keys ? [...keys].map((k) => this.pods.get(k) as Pod) : [];
  }

  /** How many non-terminated pods are bound to a node. */
  podCount(node: string): number {
    return this.#countOnNode.get(node) ?? 0;
  }

  /** Larger is newer. */
  seenOrder(pod: Pod): number {
    return this.#seen.get(keyOf(pod)) ?? 0;
  }

  #setPod(key: string, pod: Pod): void {
    this.pods.set(key, pod);
    if (!this.#seen.has(key)) this.#seen.set(key, ++this.#sequence);
    const owner = controllerUid(pod);
    if (owner) addTo(this.#byController, owner, key);
    const node = pod.spec?.nodeName;
    if (node) {
      addTo(this.#podsOnNode, node, key);
      if (!isPodTerminal(pod)) this.#countOnNode.set(node, this.podCount(node) + 1);
    }
  }

  #unindex(key: string, pod: Pod): void {
    const owner = controllerUid(pod);
    if (owner) removeFrom(this.#byController, owner, key);
    const node = pod.spec?.nodeName;
    if (node) {
      removeFrom(this.#podsOnNode, node, key);
      if (!isPodTerminal(pod)) {
        const n = this.podCount(node) - 1;
        if (n > 0) this.#countOnNode.set(node, n);
        else this.#countOnNode.delete(node);
      }
    }
  }
}

function addTo(index: Map<string, Set<string>>, key: string, value: string): void {
  let set = index.get(key);
  if (!set) {
    set = new Set();
    index.set(key, set);
  }
  set.add(value);
}

function removeFrom(index: Map<string, Set<string>>, key: string, value: string): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}
