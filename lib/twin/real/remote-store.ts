/**
 * The twin's simulated components as clients of a real kube-apiserver. This is the ClusterStore they
 * already use (ADR 0001), served by a real server: reads come from an informer cache that a watch per
 * resource type keeps current; writes are real requests that block until the server answers (SyncHttpClient),
 * and their answer enters the cache before the call returns, so a component reads its own writes as it does
 * from the in-process store. What the server refuses (validation, admission, a conflict) throws the
 * server's own Status as a StatusError.
 *
 * resourceVersions are compared as numbers: they are etcd revisions on this server, which is all this
 * cache needs to drop a watch event older than what a write already brought.
 */
import https from 'node:https';
import { notFound, StatusError, type StatusReason } from '../errors.ts';
import { RESOURCE_TYPES, type ResourceType, resourceType, typeKey } from '../resources.ts';
import {
  type ClusterStore,
  type DeleteOptions,
  deepFreeze,
  type KubeObject,
  type ListResult,
  listBucket,
  objectKey,
  type StoreEvent,
  type StoreListener,
  type WatchEventType,
} from '../store.ts';
import { type ClientTls, SyncHttpClient, type SyncResponse } from './sync-http.ts';
import { threeWayMerge } from './three-way-merge.ts';

/** How many times a write that meets a newer object is replayed on it before the Conflict is thrown. */
const CONFLICT_RETRIES = 5;
/** Deleted uids remembered, so that a watch event older than the delete cannot bring an object back. */
const TOMBSTONES = 50_000;
/** Pause before a watch that ended is opened again. */
const REWATCH_DELAY_MS = 100;

function rvOf(obj: KubeObject): number {
  return Number(obj.metadata.resourceVersion ?? 0);
}

/** The REST path of a type's collection, or of one object (and its subresource). */
export function resourcePath(
  type: ResourceType,
  namespace: string | undefined,
  name?: string,
  subresource?: string,
): string {
  const root = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const ns = type.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const obj = name === undefined ? '' : `/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;
  return `${root}${ns}/${type.plural}${obj}`;
}

/** The server's Status answer as the StatusError the in-process store would have thrown. */
function statusError(res: SyncResponse, what: string): StatusError {
  if (res.status === 0) {
    return new StatusError('ServiceUnavailable', `${what}: the API server did not answer: ${res.error}`);
  }
  let status: { reason?: string; message?: string; details?: StatusError['details'] } = {};
  try {
    status = JSON.parse(res.body) as typeof status;
  } catch {}
  return new StatusError(
    (status.reason || 'InternalError') as StatusReason,
    status.message ?? `${what}: HTTP ${res.status}`,
    status.details,
    res.status,
  );
}

/** Whether an object a DELETE answered with is still there (finalizers, or a pod's grace period). */
function stillExists(obj: KubeObject): boolean {
  return (obj.metadata.finalizers?.length ?? 0) > 0 || (obj.metadata.deletionGracePeriodSeconds ?? 0) > 0;
}

export class RemoteStore implements ClusterStore {
  readonly #baseUrl: string;
  readonly #http: SyncHttpClient;
  readonly #types: readonly ResourceType[];
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #listeners = new Set<StoreListener>();
  readonly #tombstones = new Set<string>();
  readonly #watchAgent: https.Agent;
  readonly #abort = new AbortController();
  #revision = 0;

  constructor(opts: { baseUrl: string; tls: ClientTls; types?: readonly ResourceType[] }) {
    this.#baseUrl = opts.baseUrl;
    this.#http = new SyncHttpClient(opts.baseUrl, opts.tls);
    this.#types = opts.types ?? RESOURCE_TYPES;
    this.#watchAgent = new https.Agent({ ...opts.tls, keepAlive: false });
    for (const t of this.#types) this.#objects.set(typeKey(t), new Map());
  }

  /** Fill the cache with every type's list and start watching; resolves once every list is in. */
  async start(): Promise<void> {
    const listed = await Promise.all(this.#types.map((t) => this.#list(t)));
    for (const [i, t] of this.#types.entries()) {
      const { items, resourceVersion } = listed[i] as { items: KubeObject[]; resourceVersion: string };
      this.#replace(typeKey(t), items);
      void this.#watchLoop(t, resourceVersion);
    }
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    this.#watchAgent.destroy();
    await this.#http.close();
  }

  get resourceVersion(): number {
    return this.#revision;
  }

  tryGet(key: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#bucket(key).get(objectKey(resourceType(key).namespaced ? namespace : undefined, name));
  }

  get(key: string, namespace: string | undefined, name: string): KubeObject {
    const obj = this.tryGet(key, namespace, name);
    if (!obj) throw notFound(resourceType(key), name);
    return obj;
  }

  list(key: string, namespace?: string): ListResult {
    return { items: listBucket(this.#bucket(key), namespace), resourceVersion: String(this.#revision) };
  }

  subscribe(listener: StoreListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  create(key: string, input: KubeObject): KubeObject {
    const type = resourceType(key);
    const namespace = type.namespaced ? input.metadata.namespace || 'default' : undefined;
    const {
      resourceVersion: _rv,
      uid: _uid,
      creationTimestamp: _ct,
      deletionTimestamp: _dt,
      ...meta
    } = input.metadata;
    const body = { ...input, metadata: { ...meta, ...(namespace ? { namespace } : {}) } };
    const created = this.#send('POST', resourcePath(type, namespace), body, `create ${key}`);
    return this.#apply(key, 'ADDED', created);
  }

  /**
   * PUT, as the in-process store's update. When the object changed on the server since the caller read
   * it (409), the caller's change (its read → its input) is replayed on the newest object, as a
   * controller's retry-on-conflict would recompute it.
   */
  update(key: string, input: KubeObject, opts: { subresource?: 'status' } = {}): KubeObject {
    const type = resourceType(key);
    const namespace = type.namespaced ? input.metadata.namespace || 'default' : undefined;
    const name = input.metadata.name;
    const path = resourcePath(type, namespace, name, opts.subresource);
    const base = this.tryGet(key, namespace, name);
    let body = input;
    for (let attempt = 0; ; attempt++) {
      const res = this.#http.request({ method: 'PUT', path, body: JSON.stringify(body) });
      if (res.status === 200 || res.status === 201) return this.#apply(key, 'MODIFIED', JSON.parse(res.body));
      const err = statusError(res, `update ${key} ${name}`);
      if (err.reason !== 'Conflict' || attempt >= CONFLICT_RETRIES || !base || rvOf(base) !== rvOf(input)) {
        throw err;
      }
      const fresh = this.#fetch(type, namespace, name);
      if (!fresh) throw statusError({ status: 404, body: '' }, `update ${key} ${name}`);
      body = threeWayMerge(base, input, fresh) as KubeObject;
    }
  }

  delete(key: string, namespace: string | undefined, name: string, opts: DeleteOptions = {}): KubeObject {
    const type = resourceType(key);
    const ns = type.namespaced ? namespace : undefined;
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
      ...(opts.preconditions ? { preconditions: opts.preconditions } : {}),
      ...(opts.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: opts.gracePeriodSeconds } : {}),
    };
    const cached = this.tryGet(key, ns, name);
    const answer = this.#send('DELETE', resourcePath(type, ns, name), body, `delete ${key} ${name}`);
    if (answer.kind !== 'Status') {
      return this.#apply(key, stillExists(answer) ? 'MODIFIED' : 'DELETED', answer);
    }
    // Some types answer a finished delete with a Status, not the object.
    if (cached) return this.#apply(key, 'DELETED', cached);
    return answer;
  }

  /** POST pods/<name>/binding, as kube-scheduler binds: the server sets nodeName and PodScheduled. */
  bind(namespace: string, name: string, node: string): KubeObject {
    const type = resourceType('pods');
    const binding = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace },
      target: { apiVersion: 'v1', kind: 'Node', name: node },
    };
    this.#send('POST', resourcePath(type, namespace, name, 'binding'), binding, `bind pod ${name}`);
    const pod = this.#fetch(type, namespace, name);
    if (!pod) throw statusError({ status: 404, body: '' }, `bind pod ${name}`);
    return this.#apply('pods', 'MODIFIED', pod);
  }

  #send(method: string, path: string, body: unknown, what: string): KubeObject {
    const res = this.#http.request({ method, path, body: JSON.stringify(body) });
    if (res.status < 200 || res.status > 299) throw statusError(res, what);
    return JSON.parse(res.body) as KubeObject;
  }

  /** The object as the server holds it now (undefined when it does not), brought into the cache. */
  refresh(key: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const type = resourceType(key);
    return this.#fetch(type, type.namespaced ? namespace : undefined, name);
  }

  /** GET the newest object from the server (undefined for 404), into the cache. */
  #fetch(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const res = this.#http.request({ method: 'GET', path: resourcePath(type, namespace, name) });
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw statusError(res, `get ${typeKey(type)} ${name}`);
    return this.#apply(typeKey(type), 'MODIFIED', JSON.parse(res.body));
  }

  #bucket(key: string): Map<string, KubeObject> {
    const bucket = this.#objects.get(key);
    if (!bucket) throw new Error(`the real-API twin does not cache ${key}`);
    return bucket;
  }

  /**
   * Bring one object into the cache and tell the listeners, unless the cache already holds that object
   * at this or a newer version (a watch event behind a write's answer), or it was deleted since.
   * Returns what the cache holds for it afterwards.
   */
  #apply(key: string, type: WatchEventType, incoming: KubeObject): KubeObject {
    const bucket = this.#bucket(key);
    const k = objectKey(incoming.metadata.namespace, incoming.metadata.name);
    const current = bucket.get(k);
    const uid = incoming.metadata.uid ?? '';
    const rv = rvOf(incoming);
    this.#revision = Math.max(this.#revision, rv);
    if (type === 'DELETED') {
      this.#tombstone(uid);
      if (!current || current.metadata.uid !== uid) return deepFreeze(incoming);
      bucket.delete(k);
      const gone = deepFreeze(incoming);
      this.#emit({ type: 'DELETED', key, object: gone, resourceVersion: rv });
      return gone;
    }
    if (this.#tombstones.has(uid)) return current ?? deepFreeze(incoming);
    if (current && current.metadata.uid === uid && rvOf(current) >= rv) return current;
    if (current && current.metadata.uid !== uid) {
      if (rvOf(current) > rv) return current;
      // The name was taken by a new object: the old one's DELETED has not come yet, so it is said here.
      this.#tombstone(current.metadata.uid ?? '');
      bucket.delete(k);
      this.#emit({ type: 'DELETED', key, object: current, resourceVersion: rv });
    }
    const obj = deepFreeze(incoming);
    bucket.set(k, obj);
    const kind: WatchEventType = current && current.metadata.uid === uid ? 'MODIFIED' : 'ADDED';
    this.#emit({ type: kind, key, object: obj, resourceVersion: rv });
    return obj;
  }

  #tombstone(uid: string): void {
    if (!uid) return;
    this.#tombstones.add(uid);
    if (this.#tombstones.size > TOMBSTONES) {
      const oldest = this.#tombstones.values().next().value;
      if (oldest !== undefined) this.#tombstones.delete(oldest);
    }
  }

  #emit(event: StoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  /** A relist: objects the list no longer has are deleted, others applied (only newer ones change anything). */
  #replace(key: string, items: readonly KubeObject[]): void {
    const seen = new Set(items.map((o) => o.metadata.uid));
    const listedAt = Math.max(0, ...items.map(rvOf));
    for (const current of [...this.#bucket(key).values()]) {
      // An object written after the list was taken is newer than it, not gone.
      if (!seen.has(current.metadata.uid) && rvOf(current) <= listedAt) this.#apply(key, 'DELETED', current);
    }
    for (const item of items) this.#apply(key, 'ADDED', item);
  }

  async #list(type: ResourceType): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const body = await this.#getJson(resourcePath(type, undefined));
    const list = body as { items?: KubeObject[]; metadata?: { resourceVersion?: string } };
    const apiVersion = type.group === '' ? type.version : `${type.group}/${type.version}`;
    // Items of a list carry no apiVersion/kind; the cache keeps whole objects.
    const items = (list.items ?? []).map((o) => ({ ...o, apiVersion, kind: type.kind }));
    return { items, resourceVersion: list.metadata?.resourceVersion ?? '0' };
  }

  #getJson(path: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = https.get(
        new URL(path, this.#baseUrl),
        { agent: this.#watchAgent, signal: this.#abort.signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if (res.statusCode !== 200)
              reject(statusError({ status: res.statusCode ?? 0, body: text }, `list ${path}`));
            else resolve(JSON.parse(text));
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
    });
  }

  /** One type's watch, reopened from the last version seen; a 410 Gone relists first. */
  async #watchLoop(type: ResourceType, fromVersion: string): Promise<void> {
    const key = typeKey(type);
    let version = fromVersion;
    while (!this.#abort.signal.aborted) {
      try {
        version = await this.#watchOnce(type, version);
      } catch (err) {
        if (this.#abort.signal.aborted) return;
        if (
          err instanceof StatusError &&
          (err.code === 410 || err.reason === 'Expired' || err.reason === 'Gone')
        ) {
          try {
            const listed = await this.#list(type);
            this.#replace(key, listed.items);
            version = listed.resourceVersion;
            continue;
          } catch {}
        }
      }
      await new Promise((resolve) => setTimeout(resolve, REWATCH_DELAY_MS));
    }
  }

  /** Stream watch events until the server ends the watch; resolves to the last resourceVersion seen. */
  #watchOnce(type: ResourceType, fromVersion: string): Promise<string> {
    const key = typeKey(type);
    const apiVersion = type.group === '' ? type.version : `${type.group}/${type.version}`;
    const query = `?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(fromVersion)}`;
    return new Promise((resolve, reject) => {
      let version = fromVersion;
      const req = https.get(
        new URL(resourcePath(type, undefined) + query, this.#baseUrl),
        { agent: this.#watchAgent, signal: this.#abort.signal },
        (res) => {
          if (res.statusCode !== 200) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              reject(
                statusError(
                  { status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() },
                  `watch ${key}`,
                ),
              ),
            );
            return;
          }
          let pending = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            pending += chunk;
            let nl = pending.indexOf('\n');
            while (nl >= 0) {
              const line = pending.slice(0, nl);
              pending = pending.slice(nl + 1);
              nl = pending.indexOf('\n');
              if (!line.trim()) continue;
              const event = JSON.parse(line) as { type: string; object: KubeObject };
              if (event.type === 'ERROR') {
                const status = event.object as unknown as { code?: number };
                req.destroy();
                reject(
                  statusError(
                    { status: status.code ?? 500, body: JSON.stringify(event.object) },
                    `watch ${key}`,
                  ),
                );
                return;
              }
              version = event.object.metadata?.resourceVersion ?? version;
              if (event.type === 'BOOKMARK') continue;
              this.#apply(key, event.type as WatchEventType, {
                ...event.object,
                apiVersion,
                kind: type.kind,
              });
            }
          });
          res.on('end', () => resolve(version));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
    });
  }
}
