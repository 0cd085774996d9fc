/**
 * watch: a chunked stream of JSON lines `{"type","object"}`, as the watch cache serves it.
 * - resourceVersion unset or "0": synthetic ADDED events for what exists now, then changes;
 *   resourceVersion N: every change after N (store.eventsSince), then changes; a version older than the
 *   kept history gets an ERROR event carrying a 410 Expired Status, and the stream ends (the client re-lists).
 * - With selectors, an object that stops matching is sent as DELETED and one that starts matching as ADDED
 *   (the cacher's filtering), so a client's view stays the set of matching objects.
 * - Ends after timeoutSeconds, when the client goes, or when the twin stops.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError } from '../errors.ts';
import { type ResourceType, typeKey } from '../resources.ts';
import type { KubeObject, ObjectStore, StoreEvent, WatchEventType } from '../store.ts';
import { statusOf } from './respond.ts';
import { requestMatcher } from './selectors.ts';

export interface WatchRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly store: ObjectStore;
  readonly type: ResourceType;
  readonly namespace: string | undefined;
  readonly query: URLSearchParams;
}

/** An open watch; `end()` finishes the stream cleanly, `drop()` cuts the connection. */
export interface OpenWatch {
  end(): void;
  drop(): void;
  readonly ended: Promise<void>;
}

function parseResourceVersion(text: string | null): number | undefined {
  if (text === null || text === '' || text === '0') return undefined;
  if (!/^\d+$/.test(text)) {
    throw new StatusError(
      'BadRequest',
      `resourceVersion: Invalid value: "${text}": invalid resource version`,
    );
  }
  return Number(text);
}

function parseTimeout(text: string | null): number | undefined {
  if (text === null || text === '') return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new StatusError('BadRequest', `timeoutSeconds: invalid value "${text}"`);
  return n;
}

function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

/** Validates the request (throwing a StatusError before any byte is sent), then streams until it ends. */
export function startWatch(w: WatchRequest): OpenWatch {
  const key = typeKey(w.type);
  const matches = requestMatcher(w.query, w.type);
  const fromVersion = parseResourceVersion(w.query.get('resourceVersion'));
  const timeoutSeconds = parseTimeout(w.query.get('timeoutSeconds'));
  const inScope = (obj: KubeObject) => !w.namespace || obj.metadata.namespace === w.namespace;

  // Objects the client currently sees as matching; only needed when a selector can change its mind.
  const visible = new Set<string>();
  const write = (type: WatchEventType | 'ERROR', object: unknown) => {
    w.res.write(`${JSON.stringify({ type, object })}\n`);
  };
  const deliver = (type: WatchEventType, obj: KubeObject) => {
    if (!inScope(obj)) return;
    if (!matches) {
      write(type, obj);
      return;
    }
    const id = keyOf(obj);
    const now = type !== 'DELETED' && matches(obj);
    const before = visible.has(id);
    if (now) visible.add(id);
    else visible.delete(id);
    if (now) write(before ? type : 'ADDED', obj);
    else if (before || (type === 'DELETED' && matches(obj))) write('DELETED', obj);
  };

  let backlog: readonly StoreEvent[] = [];
  let expired: StatusError | undefined;
  if (fromVersion === undefined) {
    backlog = w.store
      .list(key, w.namespace)
      .items.map((object) => ({ type: 'ADDED', key, object, resourceVersion: 0 }));
  } else {
    if (matches)
      for (const obj of w.store.list(key, w.namespace).items) if (matches(obj)) visible.add(keyOf(obj));
    try {
      backlog = w.store.eventsSince(fromVersion);
    } catch (err) {
      if (!(err instanceof StatusError) || err.reason !== 'Expired') throw err;
      expired = err;
    }
  }

  let finish: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    finish = resolve;
  });
  w.res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
  w.res.flushHeaders();

  if (expired) {
    write('ERROR', statusOf(expired));
    w.res.end();
    finish();
    return { end: () => {}, drop: () => {}, ended };
  }

  for (const e of backlog) if (e.key === key) deliver(e.type, e.object);
  // Subscribed in the same tick as the backlog was read: no change can fall between the two.
  const unsubscribe = w.store.subscribe((e) => {
    if (e.key === key) deliver(e.type, e.object);
  });
  const timer = timeoutSeconds === undefined ? undefined : setTimeout(() => end(), timeoutSeconds * 1000);
  let done = false;
  const end = () => {
    if (done) return;
    done = true;
    unsubscribe();
    if (timer) clearTimeout(timer);
    if (!w.res.writableEnded) w.res.end();
    finish();
  };
  // 'close' comes when the client disconnects as well as after end().
  w.res.on('close', end);
  return { end, drop: () => w.res.destroy(), ended };
}
