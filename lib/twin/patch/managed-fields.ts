/**
 * metadata.managedFields as the API server reads and writes them (k8s.io/apimachinery/pkg/util/
 * managedfields/internal: managedfields.go, stripmeta.go, conflict.go). One entry per manager identity:
 * manager + operation + subresource, and the apiVersion too for Update entries (BuildManagerIdentifier).
 */
import { StatusError } from '../errors.ts';
import { type FieldPath, FieldSet, fieldElement, pathString } from './fieldsv1.ts';
import { isObject } from './json-values.ts';

export type ManagedOperation = 'Apply' | 'Update';

export interface ManagerEntry {
  readonly manager: string;
  readonly operation: ManagedOperation;
  readonly apiVersion: string;
  readonly subresource?: string;
  readonly time?: string;
  readonly set: FieldSet;
}

/** Entries by manager identity. */
export type Managers = Map<string, ManagerEntry>;

export function managerId(
  e: Pick<ManagerEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'>,
): string {
  // Appliers are one identity whatever version they apply with, so re-applying with another version
  // still finds the fields applied before.
  const version = e.operation === 'Update' ? e.apiVersion : '';
  return JSON.stringify([e.manager, e.operation, version, e.subresource ?? '']);
}

/** managedFields time: RFC 3339, whole seconds, as metav1.Time serializes. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Decode managedFields; undefined when they are not valid entries (DecodeManagedFields fails). */
export function decodeManagedFields(raw: unknown): Managers | undefined {
  const managers: Managers = new Map();
  if (raw === undefined || raw === null) return managers;
  if (!Array.isArray(raw)) return undefined;
  for (const e of raw) {
    if (!isObject(e) || (e.operation !== 'Apply' && e.operation !== 'Update')) return undefined;
    if (typeof e.apiVersion !== 'string' || !e.apiVersion || e.fieldsType !== 'FieldsV1') return undefined;
    let set: FieldSet;
    try {
      set = FieldSet.fromFieldsV1(e.fieldsV1 ?? {});
    } catch {
      return undefined;
    }
    const entry: ManagerEntry = {
      manager: typeof e.manager === 'string' ? e.manager : '',
      operation: e.operation,
      apiVersion: e.apiVersion,
      ...(typeof e.subresource === 'string' && e.subresource ? { subresource: e.subresource } : {}),
      ...(typeof e.time === 'string' ? { time: e.time } : {}),
      set,
    };
    managers.set(managerId(entry), entry);
  }
  return managers;
}

/** `[]` or `[{}]` in a request: the client asks to clear managedFields (isResetManagedFields). */
export function isResetManagedFields(raw: unknown): boolean {
  if (!Array.isArray(raw)) return false;
  return raw.length === 0 || (raw.length === 1 && isObject(raw[0]) && Object.keys(raw[0]).length === 0);
}

/** Encode in the real order (sortEncodedManagedFields): operation, time, manager, apiVersion, subresource. */
export function encodeManagedFields(managers: Managers): Record<string, unknown>[] {
  const seconds = (t: string | undefined): number => (t ? Math.floor(Date.parse(t) / 1000) : 0);
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...managers.values()]
    .sort(
      (p, q) =>
        cmp(p.operation, q.operation) ||
        seconds(p.time) - seconds(q.time) ||
        cmp(p.manager, q.manager) ||
        cmp(p.apiVersion, q.apiVersion) ||
        cmp(p.subresource ?? '', q.subresource ?? ''),
    )
    .map((e) => ({
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      ...(e.time ? { time: e.time } : {}),
      fieldsType: 'FieldsV1',
      fieldsV1: e.set.toFieldsV1(),
      ...(e.subresource ? { subresource: e.subresource } : {}),
    }));
}

/** Paths nobody owns (stripmeta.go): identity and server-set metadata. */
const STRIPPED = (() => {
  const set = new FieldSet();
  set.insert([fieldElement('apiVersion')]);
  set.insert([fieldElement('kind')]);
  set.insert([fieldElement('metadata')]);
  for (const field of [
    'name',
    'namespace',
    'creationTimestamp',
    'selfLink',
    'uid',
    'clusterName',
    'generation',
    'managedFields',
    'resourceVersion',
  ]) {
    set.insert([fieldElement('metadata'), fieldElement(field)]);
  }
  return set;
})();

/** Take the stripped paths out of every entry and drop the entries left owning nothing. */
export function stripServerFields(managers: Managers): Managers {
  const out: Managers = new Map();
  for (const [id, e] of managers) {
    const set = e.set.difference(STRIPPED);
    if (!set.isEmpty()) out.set(id, { ...e, set });
  }
  return out;
}

export function sameManagers(a: Managers, b: Managers): boolean {
  if (a.size !== b.size) return false;
  for (const [id, e] of a) {
    const other = b.get(id);
    if (!other || other.apiVersion !== e.apiVersion || !other.set.equals(e.set)) return false;
  }
  return true;
}

/** How conflict messages name a manager (conflict.go printManager). */
function managerLabel(e: ManagerEntry): string {
  let label = JSON.stringify(e.manager);
  if (e.subresource) label += ` with subresource ${JSON.stringify(e.subresource)}`;
  // Update identities carry no time (BuildManagerIdentifier drops it), so the real message has none.
  if (e.operation === 'Update') label += ` using ${e.apiVersion}`;
  return label;
}

export interface Conflict {
  readonly entry: ManagerEntry;
  readonly path: FieldPath;
}

/** The 409 an apply with conflicts gets (conflict.go NewConflictError / getConflictMessage). */
export function conflictError(conflicts: readonly Conflict[]): StatusError {
  const sorted = [...conflicts].sort((a, b) => {
    const ka = managerId(a.entry);
    const kb = managerId(b.entry);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const causes = sorted.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${managerLabel(c.entry)}`,
    field: pathString(c.path),
  }));
  let message: string;
  const [only] = sorted;
  if (sorted.length === 1 && only) {
    message = `Apply failed with 1 conflict: conflict with ${managerLabel(only.entry)}: ${pathString(only.path)}`;
  } else {
    const lines: string[] = [];
    let previous: string | undefined;
    for (const c of sorted) {
      const id = managerId(c.entry);
      if (id !== previous) lines.push(`conflicts with ${managerLabel(c.entry)}:`);
      previous = id;
      lines.push(`- ${pathString(c.path)}`);
    }
    message = `Apply failed with ${sorted.length} conflicts: ${lines.join('\n')}`;
  }
  return new StatusError('Conflict', message, { causes });
}
