/**
 * What kube-controller-manager's garbage collector does, for a real kube-apiserver that runs without one
 * (the in-process store collects garbage itself): an object whose owners are all gone is deleted; one with
 * an owner gone and others left loses that reference; an owner deleted in the foreground
 * (`foregroundDeletion` finalizer) waits until its dependents that block it are gone, and one deleted with
 * `orphan` lets its dependents go first. Owners are judged gone by a live read, never by the cache alone,
 * as the real collector does (an owner created a moment ago may not have reached the cache yet).
 *
 * See https://kubernetes.io/docs/concepts/architecture/garbage-collection/.
 */
import { StatusError } from '../errors.ts';
import { findByKind, RESOURCE_TYPES, typeKey } from '../resources.ts';
import type { KubeObject, OwnerReference, StoreEvent } from '../store.ts';
import type { RemoteStore } from './remote-store.ts';

const FOREGROUND = 'foregroundDeletion';
const ORPHAN = 'orphan';

interface Ref {
  readonly key: string;
  readonly namespace: string | undefined;
  readonly name: string;
}

export interface GarbageCollector {
  stop(): void;
}

function refOf(key: string, obj: KubeObject): Ref {
  return { key, namespace: obj.metadata.namespace, name: obj.metadata.name };
}

export function startGarbageCollector(store: RemoteStore, signal: AbortSignal): GarbageCollector {
  /** Owner uid → its dependents (as `key|namespace|name`). */
  const dependents = new Map<string, Set<string>>();
  const pending = new Set<string>();
  let scheduled = false;

  const id = (r: Ref): string => `${r.key}|${r.namespace ?? ''}|${r.name}`;
  const parse = (s: string): Ref => {
    const [key = '', namespace = '', name = ''] = s.split('|');
    return { key, namespace: namespace || undefined, name };
  };
  const current = (r: Ref): KubeObject | undefined => store.tryGet(r.key, r.namespace, r.name);

  const index = (event: StoreEvent, previous: KubeObject | undefined): void => {
    const ref = id(refOf(event.key, event.object));
    for (const o of previous?.metadata.ownerReferences ?? []) dependents.get(o.uid)?.delete(ref);
    if (event.type === 'DELETED') return;
    for (const o of event.object.metadata.ownerReferences ?? []) {
      const set = dependents.get(o.uid) ?? new Set<string>();
      dependents.set(o.uid, set);
      set.add(ref);
    }
  };

  /** Whether the owner a reference names is there (a live read: the cache may lag behind its creation). */
  const ownerPresent = (o: OwnerReference, namespace: string | undefined): boolean => {
    const type = findByKind(o.apiVersion, o.kind);
    if (!type) return true; // a kind the twin does not follow: left alone
    const key = typeKey(type);
    const ns = type.namespaced ? namespace : undefined;
    const cached = store.tryGet(key, ns, o.name);
    if (cached?.metadata.uid === o.uid)
      return !cached.metadata.deletionTimestamp || hasFinalizer(cached, FOREGROUND);
    try {
      const live = store.refresh(key, ns, o.name);
      return live?.metadata.uid === o.uid;
    } catch {
      return true; // unsure: keep the dependent, try again on its next event
    }
  };

  const hasFinalizer = (obj: KubeObject, f: string): boolean =>
    (obj.metadata.finalizers ?? []).includes(f) && !!obj.metadata.deletionTimestamp;

  const removeFinalizer = (r: Ref, obj: KubeObject, f: string): void => {
    const finalizers = (obj.metadata.finalizers ?? []).filter((x) => x !== f);
    store.update(r.key, { ...obj, metadata: { ...obj.metadata, finalizers } });
  };

  /** One object: collected if its owners are gone; finalizers of the collector's own handled. */
  const process = (r: Ref): void => {
    const obj = current(r);
    if (!obj) return;
    const refs = obj.metadata.ownerReferences ?? [];
    if (refs.length > 0 && !obj.metadata.deletionTimestamp) {
      const alive = refs.filter((o) => ownerPresent(o, obj.metadata.namespace));
      if (alive.length === 0) {
        store.delete(r.key, r.namespace, r.name, {
          propagationPolicy: 'Background',
          preconditions: { uid: obj.metadata.uid },
        });
        return;
      }
      if (alive.length < refs.length) {
        store.update(r.key, { ...obj, metadata: { ...obj.metadata, ownerReferences: alive } });
      }
    }
    const uid = obj.metadata.uid ?? '';
    const mine = [...(dependents.get(uid) ?? [])].map(parse);
    if (hasFinalizer(obj, ORPHAN)) {
      for (const d of mine) {
        const dep = current(d);
        const left = dep?.metadata.ownerReferences?.filter((o) => o.uid !== uid);
        if (dep && left)
          store.update(d.key, { ...dep, metadata: { ...dep.metadata, ownerReferences: left } });
      }
      removeFinalizer(r, obj, ORPHAN);
    } else if (hasFinalizer(obj, FOREGROUND)) {
      let blocking = 0;
      for (const d of mine) {
        const dep = current(d);
        if (!dep) continue;
        if (dep.metadata.ownerReferences?.some((o) => o.uid === uid && o.blockOwnerDeletion)) blocking++;
        if (!dep.metadata.deletionTimestamp) {
          store.delete(d.key, d.namespace, d.name, {
            propagationPolicy: 'Foreground',
            preconditions: { uid: dep.metadata.uid },
          });
        }
      }
      if (blocking === 0) removeFinalizer(r, obj, FOREGROUND);
    }
  };

  const drain = (): void => {
    scheduled = false;
    for (const s of [...pending]) {
      pending.delete(s);
      if (signal.aborted) return;
      try {
        process(parse(s));
      } catch (err) {
        // Gone or changed under us: its next event brings it back here.
        if (!(err instanceof StatusError)) console.error('twin garbage collector:', err);
      }
    }
  };

  const enqueue = (r: Ref): void => {
    pending.add(id(r));
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  };

  /** The last version of each object seen, for the owner index (events carry only the new one). */
  const cache = new Map<string, KubeObject>();
  for (const t of RESOURCE_TYPES) {
    const key = typeKey(t);
    for (const obj of store.list(key).items) {
      cache.set(id(refOf(key, obj)), obj);
      index({ type: 'ADDED', key, object: obj, resourceVersion: 0 }, undefined);
      if (obj.metadata.ownerReferences?.length || obj.metadata.deletionTimestamp) enqueue(refOf(key, obj));
    }
  }
  const unsubscribe = store.subscribe((event) => {
    const ref = refOf(event.key, event.object);
    const k = id(ref);
    const previous = cache.get(k);
    if (event.type === 'DELETED') cache.delete(k);
    else cache.set(k, event.object);
    index(event, previous);
    if (event.type === 'DELETED') {
      // Its dependents may be garbage now, and owners deleted in the foreground may be free to go.
      for (const d of dependents.get(event.object.metadata.uid ?? '') ?? []) enqueue(parse(d));
      for (const o of event.object.metadata.ownerReferences ?? []) {
        const type = findByKind(o.apiVersion, o.kind);
        if (type)
          enqueue({
            key: typeKey(type),
            namespace: type.namespaced ? ref.namespace : undefined,
            name: o.name,
          });
      }
      return;
    }
    if (event.object.metadata.ownerReferences?.length || event.object.metadata.deletionTimestamp)
      enqueue(ref);
  });
  return { stop: unsubscribe };
}
