/**
 * Label and field selectors as the API server parses and applies them
 * (k8s.io/apimachinery/pkg/labels/selector.go, pkg/fields/selector.go), and the field labels each type
 * supports (the registries' GetAttrs / field label conversion funcs in pkg/registry and pkg/apis/core/v1).
 */
import { badRequest } from '../errors.ts';
import { type ResourceType, typeKey } from '../resources.ts';
import type { KubeObject } from '../store.ts';

export type Matcher = (obj: KubeObject) => boolean;

// ---- labels

type LabelRequirement =
  | { op: 'exists' | 'notexists'; key: string }
  | { op: 'in' | 'notin'; key: string; values: Set<string> }
  | { op: 'gt' | 'lt'; key: string; value: number };

const KEY = '(?:[A-Za-z0-9](?:[-A-Za-z0-9.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?';
const VALUE = '(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?';
const EXISTS = new RegExp(`^(!?)\\s*(${KEY})$`);
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`);
const ORDER = new RegExp(`^(${KEY})\\s*(>|<)\\s*(-?\\d+)$`);
const VALUE_ONLY = new RegExp(`^${VALUE}$`);

/** Split at commas outside parentheses: `a in (x,y),b` → [`a in (x,y)`, `b`]. */
function splitRequirements(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(selector.slice(start));
  return parts.map((p) => p.trim());
}

function parseLabelRequirement(text: string): LabelRequirement {
  let m = EXISTS.exec(text);
  if (m) return { op: m[1] ? 'notexists' : 'exists', key: m[2] as string };
  m = EQUALITY.exec(text);
  if (m)
    return { op: m[2] === '!=' ? 'notin' : 'in', key: m[1] as string, values: new Set([m[3] as string]) };
  m = SET.exec(text);
  if (m) {
    const values = (m[3] as string).split(',').map((v) => v.trim());
    if (values.every((v) => VALUE_ONLY.test(v))) {
      return { op: m[2] as 'in' | 'notin', key: m[1] as string, values: new Set(values) };
    }
  }
  m = ORDER.exec(text);
  if (m) return { op: m[2] === '>' ? 'gt' : 'lt', key: m[1] as string, value: Number(m[3]) };
  throw badRequest(
    `unable to parse requirement: found '${text}', expected: key, !key, key=value, key!=value, key in (values) or key notin (values)`,
  );
}

function matchesLabel(req: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = labels[req.key];
  switch (req.op) {
    case 'exists':
      return has;
    case 'notexists':
      return !has;
    case 'in':
      return has && req.values.has(value as string);
    // `!=` and `notin` also match objects without the label, as in labels.Requirement.Matches.
    case 'notin':
      return !has || !req.values.has(value as string);
    case 'gt':
    case 'lt': {
      const n = Number(value);
      if (!has || !/^-?\d+$/.test(value as string)) return false;
      return req.op === 'gt' ? n > req.value : n < req.value;
    }
  }
}

export function parseLabelSelector(selector: string | null): Matcher | undefined {
  if (!selector?.trim()) return undefined;
  const reqs = splitRequirements(selector).map(parseLabelRequirement);
  return (obj) => {
    const labels = obj.metadata.labels ?? {};
    return reqs.every((r) => matchesLabel(r, labels));
  };
}

// ---- fields

type FieldGetter = (obj: KubeObject) => unknown;

function at(path: string): FieldGetter {
  const keys = path.split('.');
  return (obj) =>
    keys.reduce<unknown>(
      (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
      obj,
    );
}

/** Field labels beyond metadata.name/namespace, per storage key. */
const TYPE_FIELDS: Record<string, Record<string, FieldGetter>> = {
  pods: Object.fromEntries(
    [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'spec.hostNetwork',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ].map((f) => [f, at(f)]),
  ),
  nodes: { 'spec.unschedulable': at('spec.unschedulable') },
  namespaces: { 'status.phase': at('status.phase') },
  secrets: { type: at('type') },
  'jobs.batch': { 'status.successful': at('status.successful') },
  events: {
    ...Object.fromEntries(
      ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'].map((f) => [
        `involvedObject.${f}`,
        at(`involvedObject.${f}`),
      ]),
    ),
    reason: at('reason'),
    reportingComponent: at('reportingComponent'),
    // The core/v1 Event field label `source` is source.component (pkg/apis/core/v1/conversion.go).
    source: at('source.component'),
    type: at('type'),
  },
};

function fieldGetter(type: ResourceType, field: string): FieldGetter | undefined {
  if (field === 'metadata.name') return (obj) => obj.metadata.name;
  if (field === 'metadata.namespace' && type.namespaced) return (obj) => obj.metadata.namespace;
  return TYPE_FIELDS[typeKey(type)]?.[field];
}

/** A field's value as a selector compares it: absent is "", booleans and numbers as Go formats them. */
function fieldText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return String(value);
}

/** Split at commas not escaped with a backslash. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let current = '';
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i] as string;
    if (c === '\\' && i + 1 < selector.length) {
      current += c + selector[++i];
    } else if (c === ',') {
      terms.push(current);
      current = '';
    } else current += c;
  }
  terms.push(current);
  return terms;
}

function unescapeValue(value: string): string {
  return value.replace(/\\(.)/g, '$1');
}

export function parseFieldSelector(selector: string | null, type: ResourceType): Matcher | undefined {
  if (!selector?.trim()) return undefined;
  const terms = splitTerms(selector).map((term) => {
    const m = /^([^=!]+?)\s*(!=|==|=)\s*(.*)$/.exec(term.trim());
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = m[1] as string;
    const get = fieldGetter(type, field);
    // The registry's field label conversion refuses fields it does not index.
    if (!get) throw badRequest(`field label not supported: ${field}`);
    return { get, negate: m[2] === '!=', value: unescapeValue(m[3] as string) };
  });
  return (obj) => terms.every((t) => (fieldText(t.get(obj)) === t.value) !== t.negate);
}

/** Both selectors of a request as one matcher, or undefined when neither filters. */
export function requestMatcher(query: URLSearchParams, type: ResourceType): Matcher | undefined {
  const labels = parseLabelSelector(query.get('labelSelector'));
  const fields = parseFieldSelector(query.get('fieldSelector'), type);
  if (labels && fields) return (obj) => labels(obj) && fields(obj);
  return labels ?? fields;
}
