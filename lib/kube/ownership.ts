/**
 * Only our objects: everything ccm-migrate creates carries `app.kubernetes.io/managed-by: ccm-migrate`, an
 * upgrade does not take over an object of the same name that someone else made (unless told to adopt it),
 * and the way back deletes only what carries the label.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describeObject } from './apply.ts';
import type { KubeClients } from './clients.ts';
import { call, httpStatus, orNotFound } from './errors.ts';

export const MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'ccm-migrate' } as const;

export function isOurs(obj: KubernetesObject | undefined): boolean {
  return obj?.metadata?.labels?.[MANAGED_BY.key] === MANAGED_BY.value;
}

function readLive(clients: KubeClients, obj: KubernetesObject): Promise<KubernetesObject | undefined> {
  return orNotFound(
    call(`read ${describeObject(obj)}`, () =>
      clients.objects.read({
        apiVersion: obj.apiVersion as string,
        kind: obj.kind as string,
        metadata: { name: obj.metadata?.name as string, namespace: obj.metadata?.namespace as string },
      }),
    ),
  );
}

/** Of `objects`, those that exist in the cluster without our label, as "Kind ns/name". */
export async function foreignObjects(
  clients: KubeClients,
  objects: readonly KubernetesObject[],
): Promise<string[]> {
  const foreign: string[] = [];
  for (const obj of objects) {
    const live = await readLive(clients, obj);
    if (live && !isOurs(live)) foreign.push(describeObject(obj));
  }
  return foreign;
}

/**
 * Delete the live object of `obj`'s name if it is ours (this very object: a uid precondition); whether it
 * was. One someone else made is left where it is.
 */
export async function deleteIfOurs(
  clients: KubeClients,
  obj: KubernetesObject,
): Promise<'deleted' | 'absent' | 'not ours'> {
  const live = await readLive(clients, obj);
  if (!live) return 'absent';
  if (!isOurs(live)) return 'not ours';
  try {
    await call(`delete ${describeObject(obj)}`, () =>
      clients.objects.delete(live as never, undefined, undefined, undefined, undefined, undefined, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        preconditions: { uid: live.metadata?.uid },
      } as never),
    );
    return 'deleted';
  } catch (err) {
    if (httpStatus(err) === 404) return 'absent';
    throw err;
  }
}
