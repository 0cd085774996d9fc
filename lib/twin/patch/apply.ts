/**
 * Field ownership: server-side apply and the bookkeeping of ordinary writes, after
 * k8s.io/apimachinery/pkg/util/managedfields (FieldManager: versioncheck, skipnonapplied,
 * managedfieldsupdater, stripmeta, structuredmerge) and structured-merge-diff merge/update.go.
 * See https://kubernetes.io/docs/reference/using-api/server-side-apply/.
 */
import { badRequest, StatusError } from '../errors.ts';
import { apiVersionOf, type ResourceType } from '../resources.ts';
import type { KubeObject } from '../store.ts';
import type { FieldSet } from './fieldsv1.ts';
import { deepEqual, isObject, type JsonObject } from './json-values.ts';
import {
  type Conflict,
  conflictError,
  decodeManagedFields,
  encodeManagedFields,
  formatTime,
  isResetManagedFields,
  type ManagerEntry,
  type Managers,
  managerId,
  sameManagers,
  stripServerFields,
} from './managed-fields.ts';
import { type PatchSchema, schemaFor } from './merge-keys.ts';
import { compare, merge, removeItems, TypedError, toFieldSet } from './structured.ts';

/** The manager that takes over the fields of an object that had no managedFields (skipnonapplied.go). */
const BEFORE_FIRST_APPLY = 'before-first-apply';

export interface ApplyOptions {
  readonly type: ResourceType;
  readonly current: KubeObject | undefined;
  readonly applied: KubeObject;
  readonly fieldManager: string;
  readonly force: boolean;
  readonly subresource?: 'status';
  readonly now?: Date;
}

export interface UpdateOptions {
  readonly type: ResourceType;
  readonly current: KubeObject | undefined;
  readonly next: KubeObject;
  readonly fieldManager: string;
  readonly subresource?: 'status';
  readonly now?: Date;
}

function withoutManagedFields(obj: KubeObject): JsonObject {
  const { managedFields: _mf, ...metadata } = obj.metadata ?? {};
  return { ...obj, metadata };
}

/**
 * The part of an object an operation may change (the registry's reset fields): only `status` through the
 * status subresource, everything but `status` through the main resource of a type that has one.
 */
function inScope(type: ResourceType, subresource: 'status' | undefined, obj: JsonObject): JsonObject {
  if (subresource === 'status') return obj.status === undefined ? {} : { status: obj.status };
  if (!type.subresources.includes('status')) return obj;
  const { status: _status, ...rest } = obj;
  return rest;
}

/** PatchOptions validation for apply (apimachinery meta/v1/validation ValidatePatchOptions). */
function validateFieldManager(fieldManager: string): void {
  let problem: { reason: string; message: string } | undefined;
  if (!fieldManager)
    problem = { reason: 'FieldValueRequired', message: 'Required value: is required for apply patch' };
  else if (fieldManager.length > 128) {
    problem = { reason: 'FieldValueTooLong', message: 'Too long: may not be more than 128 bytes' };
  }
  if (problem) {
    throw new StatusError(
      'Invalid',
      `PatchOptions.meta.k8s.io "" is invalid: fieldManager: ${problem.message}`,
      { group: 'meta.k8s.io', kind: 'PatchOptions', causes: [{ ...problem, field: 'fieldManager' }] },
    );
  }
}

/** versioncheck.go, structuredmerge.go and patch.go checkName: what an applied body must satisfy. */
function validateApplied(type: ResourceType, applied: unknown, current: KubeObject | undefined): KubeObject {
  if (!isObject(applied))
    throw badRequest('error decoding YAML: the applied configuration must be an object');
  const apiVersion = typeof applied.apiVersion === 'string' ? applied.apiVersion : '';
  const kind = typeof applied.kind === 'string' ? applied.kind : '';
  if (apiVersion !== apiVersionOf(type) || kind !== type.kind) {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
    throw badRequest(`invalid object type: ${group}/${version}, Kind=${kind}`);
  }
  const metadata = isObject(applied.metadata) ? applied.metadata : {};
  if (metadata.managedFields !== undefined && metadata.managedFields !== null) {
    throw badRequest('metadata.managedFields must be nil');
  }
  const name = metadata.name;
  if (current && name !== undefined && name !== current.metadata.name) {
    throw badRequest(
      `the name of the object (${String(name)}) does not match the name on the URL (${current.metadata.name})`,
    );
  }
  return applied as KubeObject;
}

/** The object's own managers, or the ones a first apply on an untracked object starts from. */
function managersBeforeApply(
  schema: PatchSchema,
  type: ResourceType,
  opts: ApplyOptions,
  live: JsonObject,
  time: string,
): Managers {
  const managers = decodeManagedFields(opts.current?.metadata.managedFields) ?? new Map();
  if (managers.size > 0 || !opts.current) return managers;
  const { added } = compare(schema, {}, inScope(type, opts.subresource, live));
  const entry: ManagerEntry = {
    manager: BEFORE_FIRST_APPLY,
    operation: 'Update',
    apiVersion: apiVersionOf(type),
    time,
    set: added,
  };
  return stripServerFields(new Map([[managerId(entry), entry]]));
}

/** Remove what the applier applied last time and no longer applies, unless someone else owns it. */
function prune(
  schema: PatchSchema,
  merged: JsonObject,
  lastSet: FieldSet | undefined,
  managers: Managers,
): JsonObject {
  if (!lastSet || lastSet.isEmpty()) return merged;
  let owned: FieldSet | undefined;
  for (const e of managers.values()) owned = owned ? owned.union(e.set) : e.set;
  const last = lastSet.withNamedFieldsAsMembers();
  const present = toFieldSet(schema, merged, false).withNamedFieldsAsMembers();
  const remove = owned
    ? present.intersection(last).difference(owned.withNamedFieldsAsMembers())
    : present.intersection(last);
  return removeItems(schema, merged, remove) as JsonObject;
}

/**
 * Server-side apply of `applied` (the parsed apply-patch+yaml body) by `fieldManager` onto `current`
 * (undefined when the object does not exist yet: the result is the object to create). Returns the merged
 * object with metadata.managedFields updated; when nothing changes (a repeated identical apply) the result
 * is a copy equal to `current`, so the store sees a no-op. Throws StatusError 'Conflict' (409) listing
 * each conflict, unless `force`.
 */
export function serverSideApply(opts: ApplyOptions): KubeObject {
  const { type, current, fieldManager, force, subresource } = opts;
  validateFieldManager(fieldManager);
  const applied = validateApplied(type, opts.applied, current);
  const schema = schemaFor(type);
  const time = formatTime(opts.now ?? new Date());
  const apiVersion = apiVersionOf(type);
  const live = current ? withoutManagedFields(current) : {};
  const before = managersBeforeApply(schema, type, opts, live, time);
  const config = inScope(type, subresource, applied);

  let appliedSet: FieldSet;
  try {
    appliedSet = toFieldSet(schema, config);
  } catch (error) {
    if (!(error instanceof TypedError)) throw error;
    const where = `${current?.metadata.namespace ?? applied.metadata?.namespace ?? ''}/${applied.metadata?.name ?? ''}`;
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
    throw new StatusError(
      'InternalError',
      `failed to create typed patch object (${where}; ${group}/${version}, Kind=${type.kind}): ${error.message}`,
    );
  }

  const applier: ManagerEntry = {
    manager: fieldManager,
    operation: 'Apply',
    apiVersion,
    ...(subresource ? { subresource } : {}),
    set: appliedSet,
  };
  const id = managerId(applier);
  const previous = before.get(id);
  const managers: Managers = new Map(before);
  managers.set(id, { ...applier, ...(previous?.time ? { time: previous.time } : {}) });

  const merged = merge(schema, live, config) as JsonObject;
  const result = prune(schema, merged, previous?.set, managers);

  const change = compare(schema, inScope(type, subresource, live), inScope(type, subresource, result));
  const changed = change.modified.union(change.added);
  const conflicts: Conflict[] = [];
  for (const [otherId, e] of managers) {
    if (otherId === id) continue;
    const taken = e.set.intersection(changed);
    for (const path of taken.paths()) conflicts.push({ entry: e, path });
    managers.set(otherId, { ...e, set: e.set.difference(taken).difference(change.removed) });
  }
  if (conflicts.length > 0 && !force) throw conflictError(conflicts);

  const objectChanged = !current || !deepEqual(live, result);
  const final = stripServerFields(managers);
  const mine = final.get(id);
  if (mine && (objectChanged || !mine.time)) final.set(id, { ...mine, time });
  if (current && !objectChanged && sameManagers(final, before)) return structuredClone(current);
  return withManagedFields(result, final);
}

function withManagedFields(obj: JsonObject, managers: Managers): KubeObject {
  const metadata = { ...(obj.metadata as JsonObject) };
  if (managers.size > 0) metadata.managedFields = encodeManagedFields(managers);
  else delete metadata.managedFields;
  return { ...obj, metadata } as unknown as KubeObject;
}

/** The managers an update starts from (decodeLiveOrNew): the request's own, if it set valid ones. */
function managersBeforeUpdate(opts: UpdateOptions): Managers {
  const fromCurrent = (): Managers => decodeManagedFields(opts.current?.metadata.managedFields) ?? new Map();
  if (opts.subresource) return fromCurrent();
  const requested = opts.next.metadata?.managedFields;
  if (isResetManagedFields(requested)) return new Map();
  const decoded = decodeManagedFields(requested);
  return decoded && decoded.size > 0 ? decoded : fromCurrent();
}

/**
 * For create/update/json/merge/strategic patch: `next` with managedFields updated so `fieldManager`
 * (operation 'Update') owns the fields it set or changed, taking them from other managers; managers left
 * owning nothing are dropped. An object that exists but has no managedFields stays untracked, as real.
 */
export function recordUpdate(opts: UpdateOptions): KubeObject {
  const { type, current, fieldManager, subresource } = opts;
  const next = structuredClone(opts.next);
  const before = managersBeforeUpdate(opts);
  // An existing object nobody tracks stays untracked until someone applies (skipnonapplied.go).
  if (current && before.size === 0) return withManagedFields(next, before);

  const schema = schemaFor(type);
  const live = current ? withoutManagedFields(current) : {};
  const change = compare(
    schema,
    inScope(type, subresource, live),
    inScope(type, subresource, withoutManagedFields(next)),
  );
  const changed = change.modified.union(change.added);
  const managers: Managers = new Map();
  for (const [otherId, e] of before) {
    managers.set(otherId, { ...e, set: e.set.difference(changed).difference(change.removed) });
  }
  const entry: ManagerEntry = {
    manager: fieldManager,
    operation: 'Update',
    apiVersion: apiVersionOf(type),
    ...(subresource ? { subresource } : {}),
    time: formatTime(opts.now ?? new Date()),
    set: changed,
  };
  const taken = stripServerFields(new Map([[managerId(entry), entry]]));
  const final = stripServerFields(managers);
  const mine = taken.get(managerId(entry));
  if (mine) {
    const previous = final.get(managerId(entry));
    final.set(managerId(entry), { ...mine, set: previous ? mine.set.union(previous.set) : mine.set });
  }
  if (
    current &&
    sameManagers(final, before) &&
    sameManagers(before, decodeManagedFields(current.metadata.managedFields) ?? new Map())
  ) {
    const metadata = { ...next.metadata };
    if (current.metadata.managedFields)
      metadata.managedFields = structuredClone(current.metadata.managedFields);
    else delete metadata.managedFields;
    return { ...next, metadata };
  }
  return withManagedFields(next, final);
}
