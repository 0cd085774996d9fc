/**
 * What kube-apiserver's registry strategies validate and the twin's clients can get wrong: object names
 * (pkg/apis/core/validation ValidateObjectMeta with each type's name rule: RBAC objects only need a path
 * segment, `system:…` included), and the workload rules the
 * product touches (apps and batch validation: replicas not negative, a selector that selects the
 * template, and a selector that never changes). Failures are 422 Invalid with the real causes and text.
 */
import { invalid } from '../errors.ts';
import { deepEqual } from '../patch/json-values.ts';
import type { ResourceType } from '../resources.ts';
import type { KubeObject } from '../store.ts';

interface Cause {
  readonly field: string;
  readonly message: string;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MESSAGE =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/** Why a name is not a path segment (path.IsValidPathSegmentName, RBAC's name rule), if it is not. */
function pathSegmentProblem(name: string): string | undefined {
  if (name === '.' || name === '..') return `may not be '${name}'`;
  for (const c of ['/', '%']) if (name.includes(c)) return `may not contain '${c}'`;
  return undefined;
}

/** Each type's name rule (ValidateNamespaceName, ValidateServiceName, the rest NameIsDNSSubdomain). */
function nameRule(type: ResourceType): { regex: RegExp; max: number; message: string } {
  if (type.plural === 'namespaces') return { regex: DNS1123_LABEL, max: 63, message: LABEL_MESSAGE };
  if (type.plural === 'services') return { regex: DNS1035_LABEL, max: 63, message: DNS1035_MESSAGE };
  return { regex: DNS1123_SUBDOMAIN, max: 253, message: SUBDOMAIN_MESSAGE };
}

/** Go's %#v of a map[string]string, as the messages print a label map. */
function goMap(labels: Record<string, string> | undefined): string {
  const entries = Object.keys(labels ?? {})
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(labels?.[k])}`);
  return `map[string]string{${entries.join(', ')}}`;
}

function nameCauses(type: ResourceType, obj: KubeObject): Cause[] {
  const name = obj.metadata.name;
  // A generated name is checked once it is made; its prefix may end in '-'.
  const checked = name || (obj.metadata.generateName ?? '').replace(/-$/, 'a');
  if (!checked) return [];
  const field = name ? 'metadata.name' : 'metadata.generateName';
  const value = name || obj.metadata.generateName;
  if (type.group === 'rbac.authorization.k8s.io') {
    const problem = pathSegmentProblem(checked);
    return problem ? [{ field, message: `Invalid value: ${JSON.stringify(value)}: ${problem}` }] : [];
  }
  const rule = nameRule(type);
  if (checked.length > rule.max) {
    return [
      {
        field,
        message: `Invalid value: ${JSON.stringify(value)}: must be no more than ${rule.max} characters`,
      },
    ];
  }
  return rule.regex.test(checked)
    ? []
    : [{ field, message: `Invalid value: ${JSON.stringify(value)}: ${rule.message}` }];
}

interface Workload {
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
    template?: { metadata?: { labels?: Record<string, string> } };
  };
}

const SELECTING = new Set(['deployments', 'daemonsets']);

function workloadCauses(type: ResourceType, obj: KubeObject, current: KubeObject | undefined): Cause[] {
  if (type.group !== 'apps' || !SELECTING.has(type.plural)) return [];
  const causes: Cause[] = [];
  const spec = (obj as Workload).spec ?? {};
  if (type.plural === 'deployments' && typeof spec.replicas === 'number' && spec.replicas < 0) {
    causes.push({
      field: 'spec.replicas',
      message: `Invalid value: ${spec.replicas}: must be greater than or equal to 0`,
    });
  }
  const selector = spec.selector;
  if (!selector || (!selector.matchLabels && !selector.matchExpressions)) {
    causes.push({ field: 'spec.selector', message: 'Required value' });
  } else {
    const labels = spec.template?.metadata?.labels ?? {};
    const selects = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
    if (!selects) {
      causes.push({
        field: 'spec.template.metadata.labels',
        message: `Invalid value: ${goMap(labels)}: \`selector\` does not match template \`labels\``,
      });
    }
    const before = (current as Workload | undefined)?.spec?.selector;
    if (before && !deepEqual(before, selector)) {
      causes.push({
        field: 'spec.selector',
        message: `Invalid value: v1.LabelSelector{MatchLabels:${goMap(selector.matchLabels)}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable`,
      });
    }
  }
  return causes;
}

/** Throws 422 Invalid when the object breaks a rule; `current` for an update. */
export function validateObject(type: ResourceType, obj: KubeObject, current?: KubeObject): void {
  const causes = [...(current ? [] : nameCauses(type, obj)), ...workloadCauses(type, obj, current)];
  if (causes.length === 0) return;
  throw invalid(
    type,
    obj.metadata.name ?? '',
    causes.map((c) => ({
      ...c,
      reason: c.message === 'Required value' ? 'FieldValueRequired' : 'FieldValueInvalid',
    })),
  );
}
