/**
 * The structured-merge-diff operations server-side apply is built from (sigs.k8s.io/structured-merge-diff
 * typed/: tofieldset.go, compare.go, merge.go, remove.go), over plain JSON objects and the list rules of
 * merge-keys.ts. Associative list items are addressed by their keys, set items by value; atomic lists
 * and atomic structs are single leaves.
 */
import {
  type FieldPath,
  FieldSet,
  fieldElement,
  keyElement,
  type PathElement,
  valueElement,
} from './fieldsv1.ts';
import { deepEqual, isObject, type JsonObject } from './json-values.ts';
import { KEY_DEFAULTS, type ListRule, type PatchSchema } from './merge-keys.ts';

const childPath = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** The SSA shape of the list at `path`: its rule when it is a set or keyed list, undefined when atomic. */
function listShape(schema: PatchSchema, path: string): ListRule | undefined {
  const rule = schema.list(path);
  return rule && rule.ssa !== 'atomic' ? rule : undefined;
}

/**
 * The path element of one list item. For the applied configuration a missing key or a duplicate is an
 * error, as in SMD; a stored object is read leniently (by index) so that a bad item never blocks writes.
 */
function itemElement(
  rule: ListRule,
  item: unknown,
  index: number,
  path: string,
  strict: boolean,
): PathElement {
  if (rule.ssa === 'set') return valueElement(item);
  const keys: Record<string, unknown> = {};
  for (const field of rule.ssa as readonly string[]) {
    const value = isObject(item) && item[field] !== undefined ? item[field] : KEY_DEFAULTS[field];
    if (value === undefined) {
      if (strict) {
        throw new TypedError(
          `.${path}: element ${index}: associative list with keys has an element that omits key field "${field}" (and doesn't have default value)`,
        );
      }
      return `i:${index}`;
    }
    keys[field] = value;
  }
  return keyElement(keys);
}

/** An applied configuration that does not fit the schema (SMD validation errors). */
export class TypedError extends Error {}

function indexItems(
  rule: ListRule,
  list: readonly unknown[],
  path: string,
  strict: boolean,
): { elements: PathElement[]; byElement: Map<PathElement, unknown> } {
  const elements = list.map((item, i) => itemElement(rule, item, i, path, strict));
  const byElement = new Map<PathElement, unknown>();
  elements.forEach((pe, i) => {
    if (byElement.has(pe) && strict)
      throw new TypedError(`.${path}: duplicate entries for key ${pe.slice(2)}`);
    if (!byElement.has(pe)) byElement.set(pe, list[i]);
  });
  return { elements, byElement };
}

/** ToFieldSet: the fields an applied configuration sets (leaves, list items, empty or null values). */
export function toFieldSet(schema: PatchSchema, value: JsonObject, strict = true): FieldSet {
  const set = new FieldSet();
  const walk = (v: unknown, path: string, at: FieldPath): void => {
    if (Array.isArray(v)) {
      const rule = listShape(schema, path);
      if (!rule) {
        set.insert(at);
        return;
      }
      const { elements } = indexItems(rule, v, path, strict);
      v.forEach((item, i) => {
        const itemAt = [...at, elements[i] as PathElement];
        if (rule.ssa !== 'set' && isObject(item)) walkFields(item, path, itemAt);
        set.insert(itemAt);
      });
      return;
    }
    if (!isObject(v) || schema.atomic(path) || Object.keys(v).length === 0) set.insert(at);
    else walkFields(v, path, at);
  };
  const walkFields = (obj: JsonObject, path: string, at: FieldPath): void => {
    for (const [key, child] of Object.entries(obj)) {
      if (child !== undefined) walk(child, childPath(path, key), [...at, fieldElement(key)]);
    }
  };
  walkFields(value, '', []);
  return set;
}

export interface Comparison {
  readonly added: FieldSet;
  readonly modified: FieldSet;
  readonly removed: FieldSet;
}

/**
 * Structs that always exist in a typed object (non-pointer Go fields), so a create does not "add" them
 * as nodes of their own; only their content is new.
 */
const VALUE_STRUCTS = new Set([
  'spec',
  'status',
  'spec.template',
  'spec.template.metadata',
  'spec.template.spec',
]);

/** Compare: which fields `rhs` added, modified or removed relative to `lhs`. */
export function compare(schema: PatchSchema, lhs: unknown, rhs: unknown): Comparison {
  const out = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  const leaf = (l: unknown, r: unknown, at: FieldPath): void => {
    if (l === undefined && r === undefined) return;
    if (l === undefined) out.added.insert(at);
    else if (r === undefined) out.removed.insert(at);
    else if (!deepEqual(l, r)) out.modified.insert(at);
  };
  const node = (l: unknown, r: unknown, path: string, at: FieldPath): void => {
    if (l === null) l = undefined;
    if (r === null) r = undefined;
    const bothLists = Array.isArray(l ?? r) && Array.isArray(r ?? l);
    const bothObjects = isObject(l ?? r) && isObject(r ?? l);
    if (bothLists) {
      const rule = listShape(schema, path);
      const empty = !(l as unknown[] | undefined)?.length && !(r as unknown[] | undefined)?.length;
      if (!rule || empty) {
        leaf(l, r, at);
        return;
      }
      markNode(l, r, path, at);
      const left = indexItems(rule, (l as unknown[]) ?? [], path, false).byElement;
      const right = indexItems(rule, (r as unknown[]) ?? [], path, false).byElement;
      for (const pe of new Set([...left.keys(), ...right.keys()])) {
        const itemAt = [...at, pe];
        if (rule.ssa === 'set') leaf(left.get(pe), right.get(pe), itemAt);
        else node(left.get(pe), right.get(pe), path, itemAt);
      }
      return;
    }
    const lo = (l as JsonObject | undefined) ?? {};
    const ro = (r as JsonObject | undefined) ?? {};
    if (
      !bothObjects ||
      schema.atomic(path) ||
      (Object.keys(lo).length === 0 && Object.keys(ro).length === 0)
    ) {
      leaf(l, r, at);
      return;
    }
    if (!VALUE_STRUCTS.has(path)) markNode(l, r, path, at);
    for (const key of new Set([...Object.keys(lo), ...Object.keys(ro)])) {
      node(lo[key], ro[key], childPath(path, key), [...at, fieldElement(key)]);
    }
  };
  const markNode = (l: unknown, r: unknown, path: string, at: FieldPath): void => {
    if (path === '') return;
    if (l === undefined) out.added.insert(at);
    else if (r === undefined) out.removed.insert(at);
  };
  node(lhs, rhs, '', []);
  return out;
}

/** Merge: `config` over `live`; config wins on leaves, keyed and set lists merge item by item. */
export function merge(schema: PatchSchema, live: unknown, config: unknown, path = ''): unknown {
  if (config === undefined) return live;
  if (config === null) return undefined;
  if (Array.isArray(config)) {
    const rule = listShape(schema, path);
    return rule ? mergeList(schema, rule, Array.isArray(live) ? live : [], config, path) : config;
  }
  if (!isObject(config) || schema.atomic(path)) return config;
  const out: JsonObject = isObject(live) ? { ...live } : {};
  for (const [key, value] of Object.entries(config)) {
    const merged = merge(schema, out[key], value, childPath(path, key));
    if (merged === undefined) delete out[key];
    else out[key] = merged;
  }
  return out;
}

/**
 * Merge two keyed/set lists as SMD's mergingWalker.visitListItems does: live order is kept, items only
 * in the configuration are placed where the configuration puts them relative to the shared ones.
 */
function mergeList(
  schema: PatchSchema,
  rule: ListRule,
  lhs: readonly unknown[],
  rhs: readonly unknown[],
  path: string,
): unknown[] {
  const left = indexItems(rule, lhs, path, false);
  const right = indexItems(rule, rhs, path, true);
  const item = (pe: PathElement): unknown =>
    rule.ssa === 'set'
      ? right.byElement.get(pe)
      : merge(schema, left.byElement.get(pe), right.byElement.get(pe), path);
  const sharedOrder = right.elements.filter((pe) => left.byElement.has(pe));
  let nextShared = sharedOrder.shift();
  const mergedRight = new Set<PathElement>();
  const out: unknown[] = [];
  let l = 0;
  let r = 0;
  while (l < left.elements.length || r < right.elements.length) {
    const lpe = left.elements[l];
    if (lpe !== undefined && r < right.elements.length) {
      if (lpe === right.elements[r]) {
        mergedRight.add(lpe);
        out.push(item(lpe));
        l++;
        r++;
        nextShared = sharedOrder.shift();
        continue;
      }
      if (right.byElement.has(lpe) && nextShared !== undefined && nextShared !== lpe) {
        l++;
        continue;
      }
    }
    if (lpe !== undefined) {
      if (!right.byElement.has(lpe)) {
        out.push(lhs[l]);
        l++;
        continue;
      }
      if (mergedRight.has(lpe)) {
        l++;
        continue;
      }
    }
    const rpe = right.elements[r];
    if (rpe !== undefined) {
      mergedRight.add(rpe);
      out.push(item(rpe));
      r++;
      if (nextShared === rpe) nextShared = sharedOrder.shift();
    }
  }
  return out.filter((v) => v !== undefined);
}

/** RemoveItems: `value` without the members of `set` (a member takes its whole subtree with it). */
export function removeItems(schema: PatchSchema, value: unknown, set: FieldSet, path = ''): unknown {
  if (Array.isArray(value)) {
    const rule = listShape(schema, path);
    if (!rule) return value;
    const { elements } = indexItems(rule, value, path, false);
    const out: unknown[] = [];
    value.forEach((item, i) => {
      const sub = set.child(elements[i] as PathElement);
      if (sub?.isMember) return;
      out.push(sub ? removeItems(schema, item, sub, path) : item);
    });
    return out;
  }
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    const sub = set.child(fieldElement(key));
    if (sub?.isMember) continue;
    out[key] = sub ? removeItems(schema, child, sub, childPath(path, key)) : child;
  }
  return out;
}
