/**
 * Small helpers over pods, nodes and conditions shared by the workload controllers, each mirroring a
 * helper of the real controllers (k8s.io/kubernetes/pkg/api/v1/pod, pkg/controller).
 */
import type { KubeObject, OwnerReference } from '../store.ts';
import type { Condition, Node, Pod, PodTemplateSpec } from './types.ts';

/** metav1.Time as serialised: RFC 3339 with second precision. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The cache key of a namespaced object: `namespace/name`. */
export function keyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Conditions with `next` set: lastTransitionTime moves only when the status changes, as the real
 * controllers' SetCondition helpers do.
 */
export function withCondition(
  conditions: readonly Condition[] | undefined,
  next: Condition,
  now: number,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const old = i >= 0 ? list[i] : undefined;
  const lastTransitionTime =
    old && old.status === next.status && old.lastTransitionTime ? old.lastTransitionTime : rfc3339(now);
  const merged = { ...next, lastTransitionTime };
  if (i >= 0) list[i] = merged;
  else list.push(merged);
  return list;
}

export function isPodTerminal(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** A pod the controllers count as theirs: not finished and not being deleted (controller.IsPodActive). */
export function isPodActive(pod: Pod): boolean {
  return !isPodTerminal(pod) && !pod.metadata.deletionTimestamp;
}

export function isPodReady(pod: Pod): boolean {
  return findCondition(pod.status?.conditions, 'Ready')?.status === 'True';
}

/**
 * podutil.IsPodAvailable: Ready for at least minReadySeconds. `availableInMs` says when a Ready pod that
 * is not available yet will be, so the controller can look again then.
 */
export function podAvailability(
  pod: Pod,
  minReadySeconds: number,
  now: number,
): { available: boolean; availableInMs?: number } {
  const ready = findCondition(pod.status?.conditions, 'Ready');
  if (ready?.status !== 'True') return { available: false };
  if (minReadySeconds <= 0) return { available: true };
  const since = Date.parse(ready.lastTransitionTime ?? '') || now;
  const at = since + minReadySeconds * 1000;
  return at <= now ? { available: true } : { available: false, availableInMs: at - now };
}

export function isNodeReady(node: Node): boolean {
  return findCondition(node.status?.conditions, 'Ready')?.status === 'True';
}

/** The ownerReference a controller puts on what it creates (metav1.NewControllerRef). */
export function controllerRef(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerUid(obj: KubeObject): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;
}

/**
 * A generateName that leaves room for the 5 random characters within 63 (names.SimpleNameGenerator cuts
 * the base at 58 characters).
 */
export function generateNameFrom(base: string): string {
  const prefix = `${base}-`;
  return prefix.length > 58 ? prefix.slice(0, 58) : prefix;
}

/** The alphabet of rand.SafeEncodeString: no vowels, no confusable characters. */
const SAFE_ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * controller.ComputeHash: FNV-32a of the pod template (plus the collision count), rendered with
 * rand.SafeEncodeString of its decimal digits. The real hash runs over a Go dump of the struct; this one
 * runs over the template's JSON, so values differ from a real cluster's but behave the same: equal
 * templates hash equal, any change gives a new hash.
 */
export function templateHash(template: PodTemplateSpec | undefined, collisionCount = 0): string {
  let h = 0x811c9dc5;
  const text = stableJson(template ?? {}) + (collisionCount ? String(collisionCount) : '');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  const digits = String(h >>> 0);
  let out = '';
  for (let i = 0; i < digits.length; i++) out += SAFE_ALPHANUMS[digits.charCodeAt(i) % SAFE_ALPHANUMS.length];
  return out;
}

/** JSON with object keys sorted, so that key order (from patches, apply) does not change a hash. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * intstr.GetScaledValueFromIntOrPercent: an int, or a percentage of `total` rounded up or down.
 * A malformed value counts as 0, as validation would have refused it.
 */
export function scaledValue(value: number | string | undefined, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+)%$/.exec(value ?? '');
  if (!m) return 0;
  const exact = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

/** The minor version of a `v1.26.15` string. */
export function kubernetesMinor(version: string): number {
  return Number(/^v?1\.(\d+)/.exec(version)?.[1] ?? 0);
}

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

/**
 * controller.ActivePods order, the one ReplicaSets and Jobs delete by: unscheduled before scheduled,
 * Pending before Unknown before Running, not Ready before Ready, then newest first. `seen` orders pods by
 * creation (larger is newer).
 */
export function deletionOrder(seen: (pod: Pod) => number): (a: Pod, b: Pod) => number {
  return (a, b) =>
    Number(Boolean(a.spec.nodeName)) - Number(Boolean(b.spec.nodeName)) ||
    (PHASE_RANK[a.status?.phase ?? 'Pending'] ?? 0) - (PHASE_RANK[b.status?.phase ?? 'Pending'] ?? 0) ||
    Number(isPodReady(a)) - Number(isPodReady(b)) ||
    seen(b) - seen(a);
}
