/**
 * Field sets and their FieldsV1 encoding, after sigs.k8s.io/structured-merge-diff fieldpath: a trie of
 * path elements, each node possibly a member itself. Path elements are kept in their FieldsV1 spelling:
 * `f:<field>`, `k:{"name":"x"}` (associative list item by its keys), `v:<json>` (set item), `i:<index>`;
 * `.` marks a node that is a member and also has children.
 */

/** One path element in FieldsV1 spelling. */
export type PathElement = string;
export type FieldPath = readonly PathElement[];

export const fieldElement = (name: string): PathElement => `f:${name}`;

/** `k:` element of an associative list item: key fields sorted by name, JSON without spaces. */
export function keyElement(fields: Readonly<Record<string, unknown>>): PathElement {
  const sorted = Object.fromEntries(
    Object.keys(fields)
      .sort()
      .map((k) => [k, fields[k]]),
  );
  return `k:${JSON.stringify(sorted)}`;
}

export const valueElement = (value: unknown): PathElement => `v:${JSON.stringify(value)}`;

/** A path as fieldpath.Path.String() prints it in conflict messages: `.spec.containers[name="x"].image`. */
export function pathString(path: FieldPath): string {
  return path
    .map((pe) => {
      const body = pe.slice(2);
      switch (pe.slice(0, 2)) {
        case 'f:':
          return `.${body}`;
        case 'k:': {
          const fields = JSON.parse(body) as Record<string, unknown>;
          return `[${Object.entries(fields)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(',')}]`;
        }
        case 'v:':
          return `[=${body}]`;
        default:
          return `[${body}]`;
      }
    })
    .join('');
}

const ELEMENT_ORDER = ['f:', 'k:', 'v:', 'i:'];

/** Children order in FieldsV1 (PathElement.Compare): fields, then keys, values, indexes. */
function compareElements(a: PathElement, b: PathElement): number {
  const byType = ELEMENT_ORDER.indexOf(a.slice(0, 2)) - ELEMENT_ORDER.indexOf(b.slice(0, 2));
  if (byType !== 0) return byType;
  if (a.startsWith('i:')) return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

export class FieldSet {
  #member = false;
  readonly #children = new Map<PathElement, FieldSet>();

  /** Decode a FieldsV1 object; throws on anything that is not one. */
  static fromFieldsV1(value: unknown): FieldSet {
    const set = new FieldSet();
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new Error('FieldsV1 must be an object');
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === '.') {
        set.#member = true;
        continue;
      }
      if (!ELEMENT_ORDER.includes(key.slice(0, 2))) throw new Error(`unknown path element ${key}`);
      const node = FieldSet.fromFieldsV1(child);
      if (node.#children.size === 0) node.#member = true;
      set.#children.set(key, node);
    }
    return set;
  }

  toFieldsV1(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (this.#member && this.#children.size > 0) out['.'] = {};
    for (const key of [...this.#children.keys()].sort(compareElements)) {
      out[key] = (this.#children.get(key) as FieldSet).toFieldsV1();
    }
    return out;
  }

  get isMember(): boolean {
    return this.#member;
  }

  child(pe: PathElement): FieldSet | undefined {
    return this.#children.get(pe);
  }

  insert(path: FieldPath): void {
    let node: FieldSet = this;
    for (const pe of path) {
      let next = node.#children.get(pe);
      if (!next) {
        next = new FieldSet();
        node.#children.set(pe, next);
      }
      node = next;
    }
    node.#member = true;
  }

  has(path: FieldPath): boolean {
    let node: FieldSet | undefined = this;
    for (const pe of path) {
      node = node.child(pe);
      if (!node) return false;
    }
    return node.#member;
  }

  isEmpty(): boolean {
    return !this.#member && [...this.#children.values()].every((c) => c.isEmpty());
  }

  union(other: FieldSet): FieldSet {
    return FieldSet.#combine(this, other, (a, b) => a || b);
  }

  difference(other: FieldSet): FieldSet {
    return FieldSet.#combine(this, other, (a, b) => a && !b);
  }

  intersection(other: FieldSet): FieldSet {
    return FieldSet.#combine(this, other, (a, b) => a && b);
  }

  /** Walk two tries together, keeping membership where `keep` says so and dropping empty nodes. */
  static #combine(
    a: FieldSet | undefined,
    b: FieldSet | undefined,
    keep: (inA: boolean, inB: boolean) => boolean,
  ): FieldSet {
    const out = new FieldSet();
    out.#member = keep(a?.isMember ?? false, b?.isMember ?? false);
    const keys = new Set([...(a ? a.#children.keys() : []), ...(b ? b.#children.keys() : [])]);
    for (const pe of keys) {
      const child = FieldSet.#combine(a?.child(pe), b?.child(pe), keep);
      if (!child.isEmpty()) out.#children.set(pe, child);
    }
    return out;
  }

  equals(other: FieldSet): boolean {
    return this.difference(other).isEmpty() && other.difference(this).isEmpty();
  }

  /**
   * EnsureNamedFieldsAreMembers: struct fields with owned children count as owned themselves, so that
   * pruning can drop a field whose whole content went away. Without a schema every `f:` element with
   * children is taken for a struct field (map keys of the served types only hold scalars).
   */
  withNamedFieldsAsMembers(): FieldSet {
    const out = new FieldSet();
    out.#member = this.#member;
    for (const [pe, child] of this.#children) {
      const copy = child.withNamedFieldsAsMembers();
      if (pe.startsWith('f:') && !child.isEmpty()) copy.#member = true;
      out.#children.set(pe, copy);
    }
    return out;
  }

  /** The member paths, in fieldpath.Set.Iterate order: a node's members first, then its children's. */
  paths(prefix: FieldPath = []): FieldPath[] {
    const keys = [...this.#children.keys()].sort(compareElements);
    const members = keys.filter((k) => this.#children.get(k)?.isMember).map((k) => [...prefix, k]);
    const nested = keys.flatMap((k) => (this.#children.get(k) as FieldSet).paths([...prefix, k]));
    return [...members, ...nested];
  }
}
