/**
 * core/v1 Events as the controllers' event recorders write them (client-go tools/record): named
 * `<object>.<hex>`, in the object's namespace (`default` for cluster-scoped objects). Best effort, like
 * the real broadcaster, which drops events it cannot write.
 */
import { randomBytes } from 'node:crypto';
import type { ClusterStore, KubeObject } from '../store.ts';

export interface EventRecord {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  /** The EventSource component (`cloud-node-controller`, `service-controller`, …). */
  readonly component: string;
}

export function recordEvent(store: ClusterStore, involved: KubeObject, event: EventRecord): void {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const namespace = involved.metadata.namespace ?? 'default';
  try {
    store.create('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${involved.metadata.name}.${randomBytes(8).toString('hex')}`, namespace },
      involvedObject: {
        apiVersion: involved.apiVersion,
        kind: involved.kind,
        name: involved.metadata.name,
        ...(involved.metadata.namespace ? { namespace: involved.metadata.namespace } : {}),
        uid: involved.metadata.uid,
        resourceVersion: involved.metadata.resourceVersion,
      },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component: event.component },
      reportingComponent: event.component,
      reportingInstance: '',
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    });
  } catch {
    // An event that cannot be written (namespace gone) is dropped, as the recorder drops it.
  }
}
