/**
 * What kube-controller-manager's serviceaccount controller does, for a real kube-apiserver that runs
 * without one: every namespace has a `default` ServiceAccount. The API server's ServiceAccount admission
 * refuses a pod whose ServiceAccount does not exist, so without it no pod of the twin could be created.
 */
import { StatusError } from '../errors.ts';
import type { ClusterStore, KubeObject } from '../store.ts';

function ensureDefault(store: ClusterStore, namespace: KubeObject): void {
  const ns = namespace.metadata.name;
  if (namespace.metadata.deletionTimestamp || store.tryGet('serviceaccounts', ns, 'default')) return;
  try {
    store.create('serviceaccounts', {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'default', namespace: ns },
    });
  } catch (err) {
    if (!(err instanceof StatusError && err.reason === 'AlreadyExists')) throw err;
  }
}

export function startServiceAccountController(store: ClusterStore): { stop(): void } {
  for (const ns of store.list('namespaces').items) ensureDefault(store, ns);
  const unsubscribe = store.subscribe((event) => {
    if (event.key === 'namespaces' && event.type === 'ADDED') ensureDefault(store, event.object);
  });
  return { stop: unsubscribe };
}
