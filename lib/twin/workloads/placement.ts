/**
 * Whether a pod may go to a node: tolerations against taints, nodeSelector and required node affinity.
 * Mirrors k8s.io/api/core/v1 Toleration.ToleratesTaint and k8s.io/component-helpers/scheduling/corev1
 * (nodeaffinity), which both the scheduler and the DaemonSet controller use.
 */
import type { Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Taint, Toleration } from './types.ts';

export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';
export const TAINT_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';
/** metav1.ObjectNameField: the only field node selectors may match on. */
export const NODE_NAME_FIELD = 'metadata.name';

/** Toleration.ToleratesTaint: an empty effect matches every effect, an empty key with Exists every key. */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? 'Equal') {
    case 'Equal':
      return (t.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/**
 * The first NoSchedule/NoExecute taint no toleration tolerates (v1helper.FindMatchingUntoleratedTaint
 * with the filter the scheduler's TaintToleration plugin and the DaemonSet controller use).
 */
export function untoleratedTaint(
  taints: readonly Taint[],
  tolerations: readonly Toleration[] | undefined,
  effects: readonly Taint['effect'][] = ['NoSchedule', 'NoExecute'],
): Taint | undefined {
  return taints.find(
    (taint) => effects.includes(taint.effect) && !(tolerations ?? []).some((t) => toleratesTaint(t, taint)),
  );
}

function matchesRequirement(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      // Both sides must parse as integers, else the requirement does not match.
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value)) return false;
      const bound = values[0] ?? '';
      if (!/^-?\d+$/.test(bound)) return false;
      return req.operator === 'Gt' ? Number(value) > Number(bound) : Number(value) < Number(bound);
    }
    default:
      return false;
  }
}

/** A term matches when all its requirements do; a term with none matches nothing. */
function matchesTerm(term: NodeSelectorTerm, node: Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels = node.metadata.labels ?? {};
  return (
    expressions.every((req) => matchesRequirement(req, labels[req.key])) &&
    fields.every((req) => req.key === NODE_NAME_FIELD && matchesRequirement(req, node.metadata.name))
  );
}

/** nodeSelector and required node affinity (terms ORed): the scheduler's NodeAffinity filter. */
export function matchesNodeSelectorAndAffinity(spec: PodSpec, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return false;
  }
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return required.nodeSelectorTerms.some((term) => matchesTerm(term, node));
}

/**
 * The only nodes a pod's required affinity allows when every term names nodes by `metadata.name In`
 * (DaemonSet pods do): the NodeAffinity plugin's PreFilter narrows the search to them. Undefined when the
 * affinity does not name nodes.
 */
export function nodeNamesRequired(spec: PodSpec): ReadonlySet<string> | undefined {
  const terms =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return undefined;
  const names = new Set<string>();
  for (const term of terms) {
    const byName = term.matchFields?.find((f) => f.key === NODE_NAME_FIELD && f.operator === 'In');
    if (!byName) return undefined;
    for (const v of byName.values ?? []) names.add(v);
  }
  return names;
}
