/**
 * Replaying a write on an object that changed since it was read: the change the writer made (from what it
 * read to what it wrote, as a JSON merge patch) applied to the newest object, which keeps the newest
 * resourceVersion. What client-go's retry-on-conflict achieves by recomputing the write, for writers
 * that only hand over the object they wanted.
 */

import { deepEqual, isObject } from '../patch/json-values.ts';
import { mergePatchValue } from '../patch/merge-patch.ts';
import type { KubeObject } from '../store.ts';

/** RFC 7386 CreateMergePatch: the patch that turns `from` into `to` (null deletes, arrays replace). */
export function mergePatchBetween(from: unknown, to: unknown): unknown {
  if (!isObject(from) || !isObject(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) if (!(key in to) || to[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (value === undefined || deepEqual(from[key], value)) continue;
    patch[key] = isObject(from[key]) && isObject(value) ? mergePatchBetween(from[key], value) : value;
  }
  return patch;
}

export function threeWayMerge(base: KubeObject, mine: KubeObject, theirs: KubeObject): KubeObject {
  const patch = mergePatchBetween(base, mine) as Record<string, unknown>;
  const merged = mergePatchValue(structuredClone(theirs), patch) as KubeObject;
  merged.metadata = { ...merged.metadata, resourceVersion: theirs.metadata.resourceVersion };
  return merged;
}
