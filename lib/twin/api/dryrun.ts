/**
 * `dryRun=All`: what a write would return, with every check the store would make, and nothing stored
 * (what `kubectl diff` and `--dry-run=server` rely on). The real server runs the whole registry path and
 * skips only the etcd write; the store has no such switch, so the answer is computed here from the same
 * rules: name or generateName, namespace exists, AlreadyExists, stale resourceVersion, finalizers.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { alreadyExists, invalid, notFound, StatusError, staleConflict } from '../errors.ts';
import { type ResourceType, resourceType, typeKey } from '../resources.ts';
import type { DeleteOptions, KubeObject, ObjectStore } from '../store.ts';

/** The alphabet of generated name suffixes (k8s.io/apimachinery/pkg/util/rand), five of them. */
const SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

function generatedName(prefix: string): string {
  return prefix + Array.from({ length: 5 }, () => SUFFIX_CHARS[randomInt(SUFFIX_CHARS.length)]).join('');
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

export function dryRunCreate(store: ObjectStore, type: ResourceType, obj: KubeObject): KubeObject {
  const meta = obj.metadata;
  const name = meta.name || (meta.generateName ? generatedName(meta.generateName) : '');
  if (!name) {
    throw invalid(type, '', [
      {
        reason: 'FieldValueRequired',
        field: 'metadata.name',
        message: 'Required value: name or generateName is required',
      },
    ]);
  }
  const namespace = type.namespaced ? meta.namespace || 'default' : undefined;
  if (namespace && !store.tryGet('namespaces', undefined, namespace))
    throw notFound(resourceType('namespaces'), namespace);
  if (store.tryGet(typeKey(type), namespace, name)) throw alreadyExists(type, name);
  const { resourceVersion: _rv, ...rest } = meta;
  return {
    ...obj,
    metadata: {
      ...rest,
      name,
      ...(namespace ? { namespace } : {}),
      uid: randomUUID(),
      creationTimestamp: now(),
      ...(type.hasSpec ? { generation: 1 } : {}),
    },
  };
}

function specChanged(a: KubeObject, b: KubeObject): boolean {
  const strip = ({ metadata: _m, status: _s, ...rest }: KubeObject): unknown => rest;
  return JSON.stringify(strip(a)) !== JSON.stringify(strip(b));
}

export function dryRunUpdate(
  store: ObjectStore,
  type: ResourceType,
  next: KubeObject,
  subresource: 'status' | undefined,
): KubeObject {
  const current = store.get(typeKey(type), next.metadata.namespace, next.metadata.name);
  const wanted = next.metadata.resourceVersion;
  if (wanted && wanted !== current.metadata.resourceVersion) throw staleConflict(type, next.metadata.name);
  if (subresource === 'status') return { ...current, status: next.status };
  const keepsStatus = type.subresources.includes('status');
  const generation = current.metadata.generation;
  return {
    ...next,
    ...(keepsStatus ? { status: current.status } : {}),
    metadata: {
      ...next.metadata,
      uid: current.metadata.uid as string,
      creationTimestamp: current.metadata.creationTimestamp as string,
      resourceVersion: current.metadata.resourceVersion as string,
      ...(generation !== undefined
        ? { generation: specChanged(current, next) ? generation + 1 : generation }
        : {}),
    },
  };
}

export function dryRunDelete(
  store: ObjectStore,
  type: ResourceType,
  namespace: string | undefined,
  name: string,
  opts: DeleteOptions,
): KubeObject {
  const current = store.get(typeKey(type), namespace, name);
  const pre = opts.preconditions;
  if (pre?.uid && pre.uid !== current.metadata.uid) {
    throw new StatusError(
      'Conflict',
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`,
    );
  }
  if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
    throw new StatusError(
      'Conflict',
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
    );
  }
  if (!current.metadata.finalizers?.length || current.metadata.deletionTimestamp) return current;
  return {
    ...current,
    metadata: { ...current.metadata, deletionTimestamp: now(), deletionGracePeriodSeconds: 0 },
  };
}
