/**
 * JSON merge patch (RFC 7386), as github.com/evanphx/json-patch MergePatch does it for the API server:
 * objects merge, `null` deletes, anything else (arrays included) replaces.
 */
import { badRequest } from '../errors.ts';
import type { KubeObject } from '../store.ts';
import { isObject } from './json-values.ts';

/** RFC 7386 MergePatch(target, patch). `target` is not modified. */
export function mergePatchValue(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatchValue(out[key], value);
  }
  return out;
}

export function applyMergePatch(current: KubeObject, patch: unknown): unknown {
  // evanphx/json-patch answers a `null` patch with ErrBadJSONPatch, which patch.go turns into a 400.
  if (patch === null || patch === undefined) throw badRequest('Invalid JSON Patch');
  return mergePatchValue(structuredClone(current), patch);
}
