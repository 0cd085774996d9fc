/**
 * The twin's object storage: what etcd plus the generic registry do in a real API server.
 * Assigns uid, resourceVersion, generation and creationTimestamp; enforces optimistic concurrency;
 * handles finalizers, deletionTimestamp and garbage collection of owned objects; and keeps a short
 * event history so that watches can start from a resourceVersion.
 *
 * Objects handed out are deep-frozen: callers `structuredClone` before changing one. That keeps lists
 * of thousands of nodes cheap and turns an accidental in-place edit into an immediate TypeError.
 */
import { randomUUID } from 'node:crypto';
import { alreadyExists, notFound, StatusError, staleConflict } from './errors.ts';
import { findByKind, resourceType, typeKey } from './resources.ts';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: unknown[];
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  readonly type: WatchEventType;
  /** Storage key of the object's type (`pods`, `deployments.apps`). */
  readonly key: string;
  readonly object: KubeObject;
  readonly resourceVersion: number;
}

export type StoreListener = (event: StoreEvent) => void;

export type PropagationPolicy = 'Background' | 'Foreground' | 'Orphan';

export interface DeleteOptions {
  readonly propagationPolicy?: PropagationPolicy;
  /**
   * 0 deletes a pod at once, as the kubelet confirms a pod it stopped. The in-process store deletes every
   * pod at once anyway; a real server gives a pod bound to a node its grace period.
   */
  readonly gracePeriodSeconds?: number;
  /** Delete only if the object still has this uid / resourceVersion (DeleteOptions.preconditions). */
  readonly preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ListResult {
  readonly items: readonly KubeObject[];
  readonly resourceVersion: string;
}

/**
 * What the twin's simulated components use of the API (ADR 0001, ADR 0005): reads from a cache that is
 * current with every write, writes that have taken effect when they return (or throw the server's
 * Status), and the change events. The in-process ObjectStore is one; RemoteStore, in front of a real
 * kube-apiserver, the other.
 */
export interface ClusterStore {
  /** The newest resourceVersion seen. */
  readonly resourceVersion: number;
  tryGet(key: string, namespace: string | undefined, name: string): KubeObject | undefined;
  get(key: string, namespace: string | undefined, name: string): KubeObject;
  /** Objects of a type, optionally in one namespace, ordered by namespace then name (as etcd keys are). */
  list(key: string, namespace?: string): ListResult;
  create(key: string, input: KubeObject): KubeObject;
  update(key: string, input: KubeObject, opts?: { subresource?: 'status' }): KubeObject;
  delete(key: string, namespace: string | undefined, name: string, opts?: DeleteOptions): KubeObject;
  /** What the pods/binding subresource does: spec.nodeName set, PodScheduled=True. */
  bind(namespace: string, name: string, node: string): KubeObject;
  /** Listen to every change; returns the function that stops listening. */
  subscribe(listener: StoreListener): () => void;
}

/** How many past events a watch can start from; older resourceVersions get 410 Gone, as after compaction. */
const HISTORY_LIMIT = 20_000;

/** A bucket's key of an object: `namespace/name`, or the name of a cluster-scoped one. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Objects of one type's bucket, optionally in one namespace, ordered by namespace then name (as etcd keys are). */
export function listBucket(
  bucket: ReadonlyMap<string, KubeObject>,
  namespace: string | undefined,
): readonly KubeObject[] {
  const prefix = namespace ? `${namespace}/` : undefined;
  const keys = [...bucket.keys()].filter((k) => !prefix || k.startsWith(prefix)).sort();
  return keys.map((k) => bucket.get(k) as KubeObject);
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function sameExceptMetaAndStatus(a: KubeObject, b: KubeObject): boolean {
  const strip = ({ metadata: _m, status: _s, ...rest }: KubeObject): unknown => rest;
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

/**
 * kube-apiserver's TaintNodesByCondition admission (plugin/pkg/admission/nodetaint): a new Node starts
 * with node.kubernetes.io/not-ready:NoSchedule, which the node lifecycle controller lifts once it is Ready.
 */
function withNotReadyTaint(node: KubeObject): void {
  const spec = (node.spec ?? {}) as { taints?: { key: string; effect: string }[] };
  const taints = spec.taints ?? [];
  if (!taints.some((t) => t.key === 'node.kubernetes.io/not-ready' && t.effect === 'NoSchedule')) {
    node.spec = {
      ...spec,
      taints: [...taints, { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }],
    };
  }
}

const GENERATE_SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

function generatedSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++)
    s += GENERATE_SUFFIX_CHARS[Math.floor(Math.random() * GENERATE_SUFFIX_CHARS.length)];
  return s;
}

export class ObjectStore implements ClusterStore {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #listeners = new Set<StoreListener>();
  readonly #history: StoreEvent[] = [];
  #revision = 0;

  constructor() {
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      this.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    }
  }

  /** The latest resourceVersion handed out. */
  get resourceVersion(): number {
    return this.#revision;
  }

  tryGet(key: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#bucket(key).get(objectKey(namespace, name));
  }

  get(key: string, namespace: string | undefined, name: string): KubeObject {
    const obj = this.tryGet(key, namespace, name);
    if (!obj) throw notFound(resourceType(key), name);
    return obj;
  }

  list(key: string, namespace?: string): ListResult {
    return { items: listBucket(this.#bucket(key), namespace), resourceVersion: String(this.#revision) };
  }

  create(key: string, input: KubeObject): KubeObject {
    const type = resourceType(key);
    const meta = input.metadata ?? ({} as ObjectMeta);
    const name = meta.name || (meta.generateName ? `${meta.generateName}${generatedSuffix()}` : '');
    if (!name) {
      throw new StatusError(
        'Invalid',
        `${type.kind} "" is invalid: metadata.name: Required value: name or generateName is required`,
        {
          kind: type.kind,
          group: type.group,
          causes: [
            {
              reason: 'FieldValueRequired',
              message: 'Required value: name or generateName is required',
              field: 'metadata.name',
            },
          ],
        },
      );
    }
    const namespace = type.namespaced ? meta.namespace || 'default' : undefined;
    if (namespace) this.#requireNamespace(namespace);
    const bucket = this.#bucket(key);
    if (bucket.has(objectKey(namespace, name))) throw alreadyExists(type, name);
    const rv = this.#revision + 1;
    const { resourceVersion: _rv, uid: _uid, deletionTimestamp: _dt, ...rest } = meta;
    const obj: KubeObject = {
      ...structuredClone(input),
      metadata: {
        ...structuredClone(rest),
        name,
        ...(namespace ? { namespace } : {}),
        uid: randomUUID(),
        resourceVersion: String(rv),
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        ...(type.hasSpec ? { generation: 1 } : {}),
      },
    };
    if (key === 'namespaces') obj.status = { phase: 'Active' };
    if (key === 'nodes') withNotReadyTaint(obj);
    return this.#commit('ADDED', key, obj);
  }

  /**
   * Replace an object. With `subresource: 'status'` only `.status` changes; otherwise `.status` is kept
   * for types that have a status subresource (as the real registry's update strategies do).
   */
  update(key: string, input: KubeObject, opts: { subresource?: 'status' } = {}): KubeObject {
    const type = resourceType(key);
    const name = input.metadata?.name;
    const namespace = type.namespaced ? input.metadata?.namespace || 'default' : undefined;
    const current = this.tryGet(key, namespace, name);
    if (!current) throw notFound(type, name);
    const wanted = input.metadata.resourceVersion;
    if (wanted && wanted !== current.metadata.resourceVersion) throw staleConflict(type, name);

    const next: KubeObject = structuredClone(input);
    const hasStatusSubresource = type.subresources.includes('status');
    if (opts.subresource === 'status') {
      const { status } = next;
      Object.assign(next, structuredClone(current), { status });
      next.metadata = structuredClone(current.metadata);
    } else {
      if (hasStatusSubresource) {
        if ('status' in current) next.status = structuredClone(current.status);
        else delete next.status;
      }
      next.metadata = {
        ...next.metadata,
        uid: current.metadata.uid,
        creationTimestamp: current.metadata.creationTimestamp,
        ...(current.metadata.deletionTimestamp
          ? { deletionTimestamp: current.metadata.deletionTimestamp }
          : {}),
      };
      if (namespace) next.metadata.namespace = namespace;
      if (type.hasSpec) {
        const generation = current.metadata.generation ?? 1;
        next.metadata.generation = sameExceptMetaAndStatus(current, next) ? generation : generation + 1;
      }
    }
    next.apiVersion = current.apiVersion;
    next.kind = current.kind;
    if (
      JSON.stringify({ ...next, metadata: { ...next.metadata, resourceVersion: '' } }) ===
      JSON.stringify({ ...current, metadata: { ...current.metadata, resourceVersion: '' } })
    ) {
      // A no-op write does not bump resourceVersion, as in the real API server.
      return current;
    }
    next.metadata.resourceVersion = String(this.#revision + 1);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      return this.#remove(key, next);
    }
    return this.#commit('MODIFIED', key, next);
  }

  /**
   * Delete an object. With finalizers it only gets a deletionTimestamp; without, it goes, and objects
   * it owns are deleted (Background/Foreground) or released (Orphan).
   */
  delete(key: string, namespace: string | undefined, name: string, opts: DeleteOptions = {}): KubeObject {
    const type = resourceType(key);
    const current = this.get(key, type.namespaced ? namespace : undefined, name);
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
    if (current.metadata.finalizers?.length) {
      if (current.metadata.deletionTimestamp) return current;
      const next = structuredClone(current);
      next.metadata.deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      next.metadata.deletionGracePeriodSeconds = 0;
      next.metadata.resourceVersion = String(this.#revision + 1);
      return this.#commit('MODIFIED', key, next);
    }
    const removed = this.#remove(key, current);
    if (key === 'namespaces') this.#deleteNamespaceContents(name);
    this.#collectDependents(current, opts.propagationPolicy ?? 'Background');
    return removed;
  }

  bind(namespace: string, name: string, node: string): KubeObject {
    const pod = this.get('pods', namespace, name);
    const spec = pod.spec as { nodeName?: string } | undefined;
    if (spec?.nodeName) {
      throw new StatusError('Conflict', `pod ${name} is already assigned to node "${spec.nodeName}"`);
    }
    const bound = this.update('pods', { ...pod, spec: { ...spec, nodeName: node } });
    const status = (bound.status ?? {}) as { conditions?: { type: string }[] };
    const conditions = (status.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    conditions.push({
      type: 'PodScheduled',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: now,
    } as never);
    return this.update('pods', { ...bound, status: { ...status, conditions } }, { subresource: 'status' });
  }

  /** Listen to every change; returns the function that stops listening. */
  subscribe(listener: StoreListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Events after `resourceVersion` (exclusive), for a watch that resumes. Throws 410 Expired when that
   * version is older than the kept history, as a compacted etcd makes the real API server do.
   */
  eventsSince(resourceVersion: number): readonly StoreEvent[] {
    const oldest = this.#history[0];
    if (oldest && resourceVersion < oldest.resourceVersion - 1) {
      throw new StatusError(
        'Expired',
        `too old resource version: ${resourceVersion} (${oldest.resourceVersion - 1})`,
      );
    }
    return this.#history.filter((e) => e.resourceVersion > resourceVersion);
  }

  #bucket(key: string): Map<string, KubeObject> {
    let bucket = this.#objects.get(key);
    if (!bucket) {
      resourceType(key);
      bucket = new Map();
      this.#objects.set(key, bucket);
    }
    return bucket;
  }

  #requireNamespace(namespace: string): void {
    const ns = this.tryGet('namespaces', undefined, namespace);
    if (!ns) throw notFound(resourceType('namespaces'), namespace);
    if (ns.metadata.deletionTimestamp) {
      throw new StatusError(
        'Forbidden',
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
    }
  }

  #commit(type: WatchEventType, key: string, obj: KubeObject): KubeObject {
    this.#revision += 1;
    obj.metadata.resourceVersion = String(this.#revision);
    deepFreeze(obj);
    this.#bucket(key).set(objectKey(obj.metadata.namespace, obj.metadata.name), obj);
    this.#emit({ type, key, object: obj, resourceVersion: this.#revision });
    return obj;
  }

  #remove(key: string, obj: KubeObject): KubeObject {
    this.#bucket(key).delete(objectKey(obj.metadata.namespace, obj.metadata.name));
    this.#revision += 1;
    const gone = deepFreeze({
      ...structuredClone(obj),
      metadata: { ...structuredClone(obj.metadata), resourceVersion: String(this.#revision) },
    });
    this.#emit({ type: 'DELETED', key, object: gone, resourceVersion: this.#revision });
    return gone;
  }

  #emit(event: StoreEvent): void {
    this.#history.push(event);
    if (this.#history.length > HISTORY_LIMIT) this.#history.splice(0, this.#history.length - HISTORY_LIMIT);
    for (const listener of this.#listeners) listener(event);
  }

  #deleteNamespaceContents(namespace: string): void {
    for (const [key, bucket] of this.#objects) {
      if (!resourceType(key).namespaced) continue;
      for (const obj of [...bucket.values()]) {
        if (obj.metadata.namespace === namespace) this.#remove(key, obj);
      }
    }
  }

  /**
   * The garbage collector: owned objects follow their owner, or are released from it (Orphan). An object
   * with another owner still present only loses its reference to this one: it goes with its last owner.
   */
  #collectDependents(owner: KubeObject, policy: PropagationPolicy): void {
    const uid = owner.metadata.uid;
    for (const [key, bucket] of this.#objects) {
      for (const obj of [...bucket.values()]) {
        const refs = obj.metadata.ownerReferences;
        if (!refs?.some((r) => r.uid === uid)) continue;
        const others = refs.filter((r) => r.uid !== uid);
        const ownedStill = others.some((r) => this.#ownerPresent(r, obj.metadata.namespace));
        if (policy === 'Orphan' || ownedStill) {
          const next = structuredClone(obj);
          next.metadata.ownerReferences = others;
          if (others.length === 0) delete next.metadata.ownerReferences;
          this.update(key, next);
        } else if (bucket.has(objectKey(obj.metadata.namespace, obj.metadata.name))) {
          this.delete(key, obj.metadata.namespace, obj.metadata.name, { propagationPolicy: policy });
        }
      }
    }
  }

  /** An owner reference names a live object: same uid, in the dependent's namespace or cluster-scoped. */
  #ownerPresent(ref: OwnerReference, namespace: string | undefined): boolean {
    const type = findByKind(ref.apiVersion, ref.kind);
    if (!type) return false;
    return (
      this.tryGet(typeKey(type), type.namespaced ? namespace : undefined, ref.name)?.metadata.uid === ref.uid
    );
  }
}
