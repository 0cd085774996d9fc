/**
 * Work done once per cluster (its clients) and namespace, such as putting the agent's code or account in
 * place: one promise shared by every caller while it lasts. A failed one is not remembered (the next call
 * tries again), and one whose objects were deleted is forgotten by whoever deleted them.
 */
import type { KubeClients } from './clients.ts';

export class OncePerNamespace<T> {
  readonly #known = new WeakMap<KubeClients, Map<string, Promise<T>>>();

  get(clients: KubeClients, namespace: string, make: () => Promise<T>): Promise<T> {
    const known = this.#known.get(clients) ?? new Map<string, Promise<T>>();
    this.#known.set(clients, known);
    let done = known.get(namespace);
    if (!done) {
      done = make();
      known.set(namespace, done);
      done.catch(() => known.delete(namespace));
    }
    return done;
  }

  forget(clients: KubeClients, namespace: string): void {
    this.#known.get(clients)?.delete(namespace);
  }
}
