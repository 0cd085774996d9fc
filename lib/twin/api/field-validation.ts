/**
 * Unknown fields, as kube-apiserver's decoder treats them (KEP-2885, server-side field validation): with
 * `fieldValidation=Strict` a create, update or patch naming a field the type does not have is refused
 * (400, `strict decoding error: unknown field "spec.foo"`); otherwise the field is dropped, with a Warning
 * header under the default `Warn`. Server-side apply refuses them whatever the option (structured merge
 * diff's "field not declared in schema").
 *
 * What a type's fields are comes from @kubernetes/client-node's generated models (each model's
 * attributeTypeMap, from the upstream OpenAPI): the same schema, not one written here.
 */
import * as models from '@kubernetes/client-node';
import { badRequest, StatusError } from '../errors.ts';
import type { ResourceType } from '../resources.ts';
import type { KubeObject } from '../store.ts';

type FieldMode = 'Strict' | 'Warn' | 'Ignore';

interface Attribute {
  readonly baseName: string;
  readonly type: string;
}

type ModelClass = { getAttributeTypeMap(): Attribute[] };

/** Model classes whose name is not `V1<Kind>`. */
const MODEL_OF_KIND: Readonly<Record<string, string>> = { Event: 'CoreV1Event' };

function model(name: string): ModelClass | undefined {
  const m = (models as unknown as Record<string, unknown>)[name];
  return m && typeof (m as ModelClass).getAttributeTypeMap === 'function' ? (m as ModelClass) : undefined;
}

const MAP = /^\{ \[key: string\]: (.+); \}$/;
const ARRAY = /^Array<(.+)>$/;

/** Walk `value` as `type`, calling `unknown` with the path of each field the type does not have. */
function walk(
  value: unknown,
  type: string,
  at: string,
  unknown: (path: string, parent: object, key: string) => void,
): void {
  if (value === null || typeof value !== 'object') return;
  const array = ARRAY.exec(type);
  if (array) {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, array[1] as string, `${at}[${i}]`, unknown);
    }
    return;
  }
  const map = MAP.exec(type);
  if (map) {
    for (const [k, v] of Object.entries(value)) walk(v, map[1] as string, `${at}.${k}`, unknown);
    return;
  }
  const cls = model(type);
  if (!cls || Array.isArray(value)) return;
  const fields = new Map(cls.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    const path = at ? `${at}.${k}` : k;
    const fieldType = fields.get(k);
    if (fieldType === undefined) unknown(path, value, k);
    else walk(v, fieldType, path, unknown);
  }
}

/** The paths of fields the object's type does not have, in the order a decoder meets them. */
export function unknownFields(type: ResourceType, obj: KubeObject): string[] {
  const found: string[] = [];
  walk(obj, MODEL_OF_KIND[type.kind] ?? `V1${type.kind}`, '', (p) => found.push(p));
  return found;
}

function fieldMode(query: URLSearchParams): FieldMode {
  const mode = query.get('fieldValidation') ?? 'Warn';
  if (mode === 'Strict' || mode === 'Warn' || mode === 'Ignore') return mode;
  throw badRequest(`fieldValidation must be one of "Ignore", "Warn", or "Strict", got "${mode}"`);
}

/**
 * The object as the decoder leaves it: unknown fields refused (Strict) or dropped; returns the warnings
 * to send (Warn). `obj` is the caller's own copy: dropped fields are deleted from it.
 */
export function decodeFields(type: ResourceType, obj: KubeObject, query: URLSearchParams): string[] {
  const mode = fieldMode(query);
  const found: { path: string; parent: object; key: string }[] = [];
  walk(obj, MODEL_OF_KIND[type.kind] ?? `V1${type.kind}`, '', (path, parent, key) =>
    found.push({ path, parent, key }),
  );
  if (found.length === 0) return [];
  if (mode === 'Strict') {
    const list = found.map((f) => `unknown field "${f.path}"`).join(', ');
    throw badRequest(
      `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${list}`,
    );
  }
  for (const f of found) delete (f.parent as Record<string, unknown>)[f.key];
  return mode === 'Warn' ? found.map((f) => `unknown field "${f.path}"`) : [];
}

/** Server-side apply's refusal of a field the schema does not declare (whatever fieldValidation says). */
export function refuseUndeclared(type: ResourceType, applied: KubeObject): void {
  const first = unknownFields(type, applied)[0];
  if (first === undefined) return;
  const ns = applied.metadata.namespace ? `${applied.metadata.namespace}/` : '';
  const gv = type.group ? `${type.group}/${type.version}` : `/${type.version}`;
  throw new StatusError(
    'InternalError',
    `failed to create typed patch object (${ns}${applied.metadata.name}; ${gv}, Kind=${type.kind}): .${first}: field not declared in schema`,
  );
}
