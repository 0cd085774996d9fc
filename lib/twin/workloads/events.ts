/**
 * core/v1 Events, recorded the way client-go's record.EventRecorder does: an event repeated for the same
 * object, reason and message bumps `count` and `lastTimestamp` of the existing Event (EventCorrelator's
 * aggregation); each source and object may emit 25 events in a burst, then one per 5 minutes
 * (EventSourceObjectSpamFilter), which keeps a 5,000-node DaemonSet from writing 5,000 Events.
 */
import type { ClusterStore, KubeObject } from '../store.ts';
import { rfc3339 } from './objects.ts';

const BURST = 25;
const REFILL_MS = 5 * 60_000;
/** The correlator's LRU cache size in client-go. */
const CACHE_SIZE = 4096;

interface Bucket {
  tokens: number;
  at: number;
}

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  readonly #store: ClusterStore;
  readonly #buckets = new Map<string, Bucket>();
  /** Same event (source, object, type, reason, message) → the Event's name. */
  readonly #recorded = new Map<string, string>();
  #serial = 0;

  constructor(store: ClusterStore) {
    this.#store = store;
  }

  /** Record an event about `obj`; never throws (an event that cannot be written is dropped, as in client-go). */
  record(component: string, obj: KubeObject, type: EventType, reason: string, message: string): void {
    try {
      this.#record(component, obj, type, reason, message);
    } catch {
      // The namespace may be going away; events are best effort.
    }
  }

  #record(component: string, obj: KubeObject, type: EventType, reason: string, message: string): void {
    const now = Date.now();
    const namespace = obj.metadata.namespace || 'default';
    const same = `${component}\0${obj.metadata.uid}\0${type}\0${reason}\0${message}`;
    const existing = this.#recorded.get(same);
    const current = existing ? this.#store.tryGet('events', namespace, existing) : undefined;
    if (!this.#allow(`${component}\0${obj.metadata.uid}`, now)) return;
    if (current) {
      this.#store.update('events', {
        ...current,
        count: Number(current.count ?? 1) + 1,
        lastTimestamp: rfc3339(now),
      });
      return;
    }
    // record.makeEvent names events `<object>.<unix nanos in hex>`.
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.#serial++ % 1_000_000);
    const name = `${obj.metadata.name}.${nanos.toString(16)}`;
    this.#store.create('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: obj.metadata.name,
        ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
      },
      reason,
      message,
      type,
      source: { component },
      firstTimestamp: rfc3339(now),
      lastTimestamp: rfc3339(now),
      count: 1,
      eventTime: null,
      reportingComponent: component,
      reportingInstance: '',
    });
    remember(this.#recorded, same, name);
  }

  /** Token bucket per source and object. */
  #allow(key: string, now: number): boolean {
    const bucket = this.#buckets.get(key) ?? { tokens: BURST, at: now };
    bucket.tokens = Math.min(BURST, bucket.tokens + (now - bucket.at) / REFILL_MS);
    bucket.at = now;
    remember(this.#buckets, key, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}

/** Set a key as the most recent of a bounded LRU map. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > CACHE_SIZE) map.delete(map.keys().next().value as string);
}
