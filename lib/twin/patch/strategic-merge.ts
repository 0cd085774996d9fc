/**
 * Strategic merge patch, ported from k8s.io/apimachinery/pkg/util/strategicpatch (patch.go: mergeMap,
 * mergeSlice, mergePatchIntoOriginal, normalizeElementOrder) with the options the API server uses
 * (MergeParallelList, IgnoreUnmatchedNulls). Errors carry the codes patch.go's
 * interpretStrategicMergePatchError gives them; the errors it passes through unchanged reach the client
 * as 500s.
 */
import { badRequest, StatusError } from '../errors.ts';
import type { KubeObject } from '../store.ts';
import { goString, isObject, type JsonObject, jsonKind } from './json-values.ts';
import type { PatchSchema } from './merge-keys.ts';

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList/';
const SET_ELEMENT_ORDER = '$setElementOrder/';

/** mergepatch's sentinel errors that patch.go maps to 400 / 422. */
const ERR = {
  badPrimitiveList: () => badRequest('invalid patch format of primitive list'),
  badRetainKeys: () => badRequest('invalid patch format of retainKeys'),
  badSetElementOrder: () => badRequest('invalid patch format of setElementOrder list'),
  noListOfLists: () =>
    new StatusError('Invalid', 'the server rejected our request due to an error in our request', {}),
};

/** An error strategicpatch returns as a plain Go error: the API server reports it as a 500. */
function internal(message: string): StatusError {
  return new StatusError('InternalError', message);
}

function noMergeKey(item: unknown, mergeKey: string): StatusError {
  return internal(`map: ${goString(item)} does not contain declared merge key: ${mergeKey}`);
}

function badPatchType(directive: unknown, map: unknown): StatusError {
  return internal(`unknown patch type: ${goString(directive)} in map: ${goString(map)}`);
}

const childPath = (path: string, key: string): string => (path ? `${path}.${key}` : key);

class StrategicMerger {
  readonly #schema: PatchSchema;

  constructor(schema: PatchSchema) {
    this.#schema = schema;
  }

  /** mergeMap: `original` is owned by the merger and changed in place; `patch` is consumed. */
  mergeMap(original: JsonObject | undefined, patch: JsonObject, path: string): JsonObject {
    if (DIRECTIVE in patch) return this.#mapDirective(patch[DIRECTIVE], patch);
    const out = original ?? {};
    applyRetainKeys(out, patch);
    this.#mergeSetElementOrderLists(out, patch, path);
    for (const [rawKey, patchValue] of Object.entries(patch)) {
      const isDeleteList = rawKey.startsWith(DELETE_FROM_PRIMITIVE_LIST);
      const key = isDeleteList ? extractKey(rawKey, DELETE_FROM_PRIMITIVE_LIST) : rawKey;
      if (patchValue === null) {
        delete out[key];
        continue;
      }
      if (!(key in out)) {
        if (!isDeleteList) out[key] = this.#fresh(patchValue, childPath(path, key));
        continue;
      }
      const originalValue = out[key];
      if (jsonKind(originalValue) !== jsonKind(patchValue)) {
        if (!isDeleteList) out[key] = this.#fresh(patchValue, childPath(path, key));
        continue;
      }
      if (isObject(patchValue)) {
        out[key] = this.mergeMap(originalValue as JsonObject, patchValue, childPath(path, key));
      } else if (Array.isArray(patchValue)) {
        out[key] = this.#mergeSliceHandler(
          originalValue as unknown[],
          patchValue,
          childPath(path, key),
          isDeleteList,
        );
      } else {
        out[key] = patchValue;
      }
    }
    return out;
  }

  #mapDirective(directive: unknown, patch: JsonObject): JsonObject {
    if (directive === 'replace') {
      delete patch[DIRECTIVE];
      return patch;
    }
    // `$patch: delete` in a map leaves an empty map, exactly as handleDirectiveInMergeMap does.
    if (directive === 'delete') return {};
    throw badPatchType(directive, patch);
  }

  /** A patch value for a key the original lacks: its directives and nulls are resolved against nothing. */
  #fresh(value: unknown, path: string): unknown {
    if (isObject(value)) return this.mergeMap(undefined, value, path);
    if (Array.isArray(value)) return this.#mergeSliceHandler([], value, path, false);
    return value;
  }

  #mergeSliceHandler(original: unknown[], patch: unknown[], path: string, isDeleteList: boolean): unknown[] {
    const rule = this.#schema.list(path);
    if (!rule?.smpMerge && !isDeleteList) return patch;
    return this.#mergeSlice(original, patch, path, rule?.mergeKey ?? '', isDeleteList);
  }

  #mergeSlice(
    original: unknown[],
    patch: unknown[],
    path: string,
    mergeKey: string,
    isDeleteList: boolean,
  ): unknown[] {
    if (original.length === 0 && patch.length === 0) return original;
    const kind = sliceElementKind(original, patch);
    let merged: unknown[];
    if (kind !== 'object') {
      if (isDeleteList) return original.filter((v) => !patch.includes(v));
      merged = [...new Set([...original, ...patch])];
    } else {
      if (!mergeKey) throw internal(`cannot merge lists without merge key for ${path}`);
      [original, patch] = withSpecialElements(original, patch as JsonObject[], mergeKey);
      merged = this.#mergeWithoutSpecialElements(original, patch as JsonObject[], mergeKey, path);
    }
    const [patchItems, serverOnly] = partition(merged, patch, mergeKey);
    return normalizeElementOrder(patchItems, serverOnly, patch, original, mergeKey, kind);
  }

  #mergeWithoutSpecialElements(
    original: unknown[],
    patch: readonly JsonObject[],
    mergeKey: string,
    path: string,
  ): unknown[] {
    const out = [...original];
    for (const item of patch) {
      if (!(mergeKey in item)) throw noMergeKey(item, mergeKey);
      const at = findByKey(out, mergeKey, item[mergeKey]);
      if (at >= 0) out[at] = this.mergeMap(out[at] as JsonObject, item, path);
      else out.push(this.mergeMap(undefined, item, path));
    }
    return out;
  }

  /** mergePatchIntoOriginal: each `$setElementOrder/<list>` with its list, ordered as the directive says. */
  #mergeSetElementOrderLists(original: JsonObject, patch: JsonObject, path: string): void {
    for (const [directiveKey, order] of Object.entries(patch)) {
      if (!directiveKey.startsWith(SET_ELEMENT_ORDER)) continue;
      delete patch[directiveKey];
      if (!Array.isArray(order)) throw ERR.badSetElementOrder();
      const key = extractKey(directiveKey, SET_ELEMENT_ORDER);
      const originalList = original[key];
      const patchList = patch[key];
      if (originalList !== undefined && !Array.isArray(originalList)) throw ERR.badSetElementOrder();
      if (patchList !== undefined && !Array.isArray(patchList)) throw ERR.badSetElementOrder();
      if (originalList === undefined && patchList === undefined) continue;
      const listPath = childPath(path, key);
      const rule = this.#schema.list(listPath);
      const mergeKey = rule?.mergeKey ?? '';
      validateAgainstOrder(patchList ?? [], order, mergeKey);
      const merged =
        originalList && patchList
          ? this.#mergeSliceHandler(originalList, patchList, listPath, false)
          : ((originalList ?? this.#fresh(patchList, listPath)) as unknown[]);
      const [patchItems, serverOnly] = partition(merged, order, mergeKey);
      const kind = sliceElementKind(originalList ?? [], patchList ?? []);
      original[key] = normalizeElementOrder(
        patchItems,
        serverOnly,
        order,
        originalList ?? [],
        mergeKey,
        kind,
      );
      delete patch[key];
    }
  }
}

function extractKey(key: string, prefix: string): string {
  const rest = key.slice(prefix.length);
  if (!rest) throw prefix === SET_ELEMENT_ORDER ? ERR.badSetElementOrder() : ERR.badPrimitiveList();
  return rest;
}

/** `$retainKeys`: drop the original's keys the list does not name; the patch may only set named keys. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!(RETAIN_KEYS in patch)) return;
  const retain = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(retain)) throw ERR.badRetainKeys();
  const keep = new Set(retain);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || key.startsWith(DELETE_FROM_PRIMITIVE_LIST) || key.startsWith(SET_ELEMENT_ORDER)) {
      continue;
    }
    if (!keep.has(key)) throw ERR.badRetainKeys();
  }
  for (const key of Object.keys(original)) if (!keep.has(key)) delete original[key];
}

/** sliceElementType: every element must have the same JSON kind, and lists of lists are refused. */
function sliceElementKind(...slices: readonly unknown[][]): ReturnType<typeof jsonKind> {
  let kind: ReturnType<typeof jsonKind> | undefined;
  for (const slice of slices) {
    for (const item of slice) {
      const k = jsonKind(item);
      if (kind === undefined) {
        if (k === 'array') throw ERR.noListOfLists();
        kind = k;
      } else if (k !== kind) {
        throw internal(`list element types are not identical: ${goString(slices)}`);
      }
    }
  }
  if (kind === undefined) throw internal('no elements in any of the given slices');
  return kind;
}

/** mergeSliceWithSpecialElements: apply `$patch: delete|replace` items, return [original, patch]. */
function withSpecialElements(
  original: unknown[],
  patch: readonly JsonObject[],
  mergeKey: string,
): [unknown[], unknown[]] {
  const plain: JsonObject[] = [];
  let replace = false;
  let out = original;
  for (const item of patch) {
    if (!(DIRECTIVE in item)) {
      plain.push(item);
      continue;
    }
    const directive = item[DIRECTIVE];
    if (directive === 'delete') {
      if (!(mergeKey in item)) throw noMergeKey(item, mergeKey);
      out = out.filter((v) => !isObject(v) || v[mergeKey] !== item[mergeKey]);
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw internal('merging lists cannot yet be specified in the patch');
    } else {
      throw badPatchType(directive, item);
    }
  }
  return replace ? [plain, []] : [out, plain];
}

function findByKey(list: readonly unknown[], mergeKey: string, value: unknown): number {
  return list.findIndex((v) => isObject(v) && mergeKey in v && v[mergeKey] === value);
}

/** Where `item` sits in `order` (by merge key for maps, by value for scalars), or -1. */
function indexIn(order: readonly unknown[], item: unknown, mergeKey: string): number {
  if (!mergeKey) return order.indexOf(item);
  const value = isObject(item) ? item[mergeKey] : undefined;
  return order.findIndex((v) => isObject(v) && v[mergeKey] === value);
}

/** Split `items` into those present in `by` and the server-only rest. */
function partition(
  items: readonly unknown[],
  by: readonly unknown[],
  mergeKey: string,
): [unknown[], unknown[]] {
  const present: unknown[] = [];
  const serverOnly: unknown[] = [];
  for (const item of items) {
    if (mergeKey && !(isObject(item) && mergeKey in item)) throw noMergeKey(item, mergeKey);
    (indexIn(by, item, mergeKey) >= 0 ? present : serverOnly).push(item);
  }
  return [present, serverOnly];
}

/** validatePatchWithSetOrderList: the patch list's items appear in the directive in the same order. */
function validateAgainstOrder(
  patchList: readonly unknown[],
  order: readonly unknown[],
  mergeKey: string,
): void {
  const items = mergeKey ? patchList.filter((v) => !isObject(v) || v[DIRECTIVE] !== 'delete') : patchList;
  let p = 0;
  let o = 0;
  while (p < items.length && o < order.length) {
    const item = items[p];
    if (isObject(item) && DIRECTIVE in item) {
      p++;
      continue;
    }
    if (mergeKey) {
      if (!isObject(item) || !(mergeKey in item)) throw noMergeKey(item, mergeKey);
      const ordered = order[o];
      if (!isObject(ordered) || !(mergeKey in ordered)) throw noMergeKey(ordered, mergeKey);
      if (item[mergeKey] === ordered[mergeKey]) p++;
    } else if (item === order[o]) {
      p++;
    }
    o++;
  }
  if (p < items.length) {
    throw internal(
      `The order in patch list:\n${goString(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goString(order)}\n`,
    );
  }
}

/**
 * normalizeElementOrder: patch items in the patch's (or directive's) order, server-only items in the live
 * order, then interleaved so that each keeps its place relative to the live list where both are known.
 */
function normalizeElementOrder(
  patchItems: unknown[],
  serverOnly: unknown[],
  patchOrder: readonly unknown[],
  serverOrder: readonly unknown[],
  mergeKey: string,
  kind: ReturnType<typeof jsonKind>,
): unknown[] {
  const key = kind === 'object' ? mergeKey : '';
  const sortBy = (items: unknown[], order: readonly unknown[]): unknown[] =>
    items
      .map((item, i) => ({ item, i, at: indexIn(order, item, key) }))
      .sort((a, b) => (a.at >= 0 && b.at >= 0 ? a.at - b.at : a.i - b.i))
      .map(({ item }) => item);
  const left = sortBy(serverOnly, serverOrder);
  const right = sortBy(patchItems, patchOrder);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]);
    else if (j >= right.length) out.push(left[i++]);
    else {
      const li = indexIn(serverOrder, left[i], key);
      const ri = indexIn(serverOrder, right[j], key);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

/** Apply a strategic merge patch to `current` (not modified); returns the patched document. */
export function applyStrategicMergePatch(current: KubeObject, patch: unknown, schema: PatchSchema): unknown {
  // A JSON null decodes to an empty patch map in Go; anything else that is not an object cannot decode.
  if (patch === null || patch === undefined) return structuredClone(current);
  if (!isObject(patch)) {
    throw badRequest(
      `json: cannot unmarshal ${jsonKind(patch)} into Go value of type map[string]interface {}`,
    );
  }
  return new StrategicMerger(schema).mergeMap(structuredClone(current), structuredClone(patch), '');
}
