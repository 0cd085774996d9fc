/**
 * Patch maths for the twin's API server: JSON patch, JSON merge patch, strategic merge patch and
 * server-side apply, with managedFields kept as the real API server keeps them. Pure functions: no
 * HTTP, no store.
 */
import { badRequest, invalid } from '../errors.ts';
import { apiVersionOf, type ResourceType } from '../resources.ts';
import type { KubeObject } from '../store.ts';
import { applyJsonPatch } from './json-patch.ts';
import { isObject } from './json-values.ts';
import { schemaFor } from './merge-keys.ts';
import { applyMergePatch } from './merge-patch.ts';
import { applyStrategicMergePatch } from './strategic-merge.ts';

export type { ApplyOptions, UpdateOptions } from './apply.ts';
export { recordUpdate, serverSideApply } from './apply.ts';
export { type PatchType, patchTypeOf } from './content-types.ts';

/** The Invalid a patched document that no longer decodes as this type gets (patch.go: field `patch`). */
function undecodable(detail: string) {
  return invalid({ group: '', plural: '', kind: '' }, '', [
    { field: 'patch', message: `Invalid value: "…": ${detail}` },
  ]);
}

/**
 * Identity checks patch.go makes on the patched object: it must still decode as the type (JSON and merge
 * patches may drop apiVersion/kind, which decoding then restores, but not change them), keep the name of
 * the URL, and not move to another namespace.
 */
function checkPatched(
  type: ResourceType,
  current: KubeObject,
  patched: unknown,
  restoreKind: boolean,
): KubeObject {
  if (!isObject(patched)) throw undecodable('json: cannot unmarshal into Go value of type the object');
  const obj = patched as KubeObject;
  for (const [field, expected] of [
    ['apiVersion', apiVersionOf(type)],
    ['kind', type.kind],
  ] as const) {
    if (restoreKind || obj[field] === undefined || obj[field] === null) obj[field] = expected;
    else if (obj[field] !== expected) {
      throw undecodable(`${field} ${JSON.stringify(obj[field])} does not match ${JSON.stringify(expected)}`);
    }
  }
  if (!isObject(obj.metadata)) obj.metadata = { name: '' };
  if (obj.metadata.name !== current.metadata.name) {
    throw badRequest(
      `the name of the object (${obj.metadata.name ?? ''}) does not match the name on the URL (${current.metadata.name})`,
    );
  }
  const namespace = current.metadata.namespace;
  if (namespace !== undefined) {
    if (!obj.metadata.namespace) obj.metadata.namespace = namespace;
    else if (obj.metadata.namespace !== namespace) {
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
  }
  return obj;
}

/**
 * json/merge/strategic patch of `current` (deep-frozen, not mutated) → a new unfrozen object. Throws
 * StatusError with the reason and code the real API server uses for that failure.
 */
export function applyPatch(
  type: ResourceType,
  current: KubeObject,
  patchType: 'json' | 'merge' | 'strategic',
  patch: unknown,
): KubeObject {
  switch (patchType) {
    case 'json':
      return checkPatched(type, current, applyJsonPatch(current, patch), false);
    case 'merge':
      return checkPatched(type, current, applyMergePatch(current, patch), false);
    case 'strategic':
      // SMP decodes straight into the typed object, which knows its own kind.
      return checkPatched(type, current, applyStrategicMergePatch(current, patch, schemaFor(type)), true);
  }
}
