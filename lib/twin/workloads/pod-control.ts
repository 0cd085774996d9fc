/**
 * Creating and deleting a controller's pods, with the events controller.RealPodControl records on the
 * owner ("Created pod: x", "Deleted pod: x"). Deletion leaves finalizers to their owners, as a DELETE does.
 */
import type { ClusterStore, KubeObject } from '../store.ts';
import type { EventRecorder } from './events.ts';
import { PODS, type Pod } from './types.ts';

export class PodControl {
  readonly #store: ClusterStore;
  readonly #events: EventRecorder | undefined;
  readonly #component: string;

  /** Without `events`, nothing is recorded (the Deployment's pods belong to ReplicaSets in real clusters). */
  constructor(store: ClusterStore, component: string, events?: EventRecorder) {
    this.#store = store;
    this.#component = component;
    this.#events = events;
  }

  create(owner: KubeObject, pod: KubeObject): Pod {
    const created = this.#store.create(PODS, pod) as Pod;
    this.#events?.record(
      this.#component,
      owner,
      'Normal',
      'SuccessfulCreate',
      `Created pod: ${created.metadata.name}`,
    );
    return created;
  }

  delete(owner: KubeObject, pod: Pod): void {
    if (pod.metadata.deletionTimestamp) return;
    this.#store.delete(PODS, pod.metadata.namespace, pod.metadata.name);
    this.#events?.record(
      this.#component,
      owner,
      'Normal',
      'SuccessfulDelete',
      `Deleted pod: ${pod.metadata.name}`,
    );
  }
}
