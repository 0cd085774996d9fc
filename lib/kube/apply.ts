/**
 * Server-side apply of manifests with ccm-migrate's field manager: the declarative, idempotent way to put
 * objects in a cluster. Applying the same manifests twice changes nothing (the API server does not bump
 * resourceVersion for a no-op apply), which is how a re-run step reports `changed: false`.
 */
import { type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import type { KubeClients } from './clients.ts';
import { call, orNotFound } from './errors.ts';

/** The field manager of every object ccm-migrate writes (kubectl shows it in managedFields). */
export const FIELD_MANAGER = 'ccm-migrate';

export interface AppliedObject {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  /** Whether the apply created or changed the object. */
  readonly changed: boolean;
}

export function describeObject(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace ? `${obj.metadata.namespace}/` : '';
  return `${obj.kind} ${ns}${obj.metadata?.name}`;
}

async function currentVersion(clients: KubeClients, obj: KubernetesObject): Promise<string | undefined> {
  const existing = await orNotFound(
    clients.objects.read({
      apiVersion: obj.apiVersion as string,
      kind: obj.kind as string,
      metadata: { name: obj.metadata?.name as string, namespace: obj.metadata?.namespace as string },
    }),
  );
  return existing?.metadata?.resourceVersion;
}

/**
 * Apply each object in order (namespaces and RBAC before the workloads that need them). `force` takes
 * fields over from other managers: ccm-migrate owns the objects it deploys.
 */
export async function applyObjects(
  clients: KubeClients,
  objects: readonly KubernetesObject[],
  opts: { force?: boolean } = {},
): Promise<AppliedObject[]> {
  const results: AppliedObject[] = [];
  for (const obj of objects) {
    const what = `apply ${describeObject(obj)}`;
    const before = await call(what, () => currentVersion(clients, obj));
    const after = await call(what, () =>
      clients.objects.patch(
        obj,
        undefined,
        undefined,
        FIELD_MANAGER,
        opts.force ?? true,
        PatchStrategy.ServerSideApply,
      ),
    );
    results.push({
      kind: obj.kind as string,
      name: obj.metadata?.name as string,
      ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
      changed: before !== after.metadata?.resourceVersion,
    });
  }
  return results;
}
