/** What the cloud controllers and the invariant monitor read from a Node. */

import { UNINITIALIZED_TAINT } from '../../kube/well-known.ts';
import type { KubeObject } from '../store.ts';

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export function taintsOf(node: KubeObject): readonly Taint[] {
  return (node.spec as { taints?: Taint[] } | undefined)?.taints ?? [];
}

export function hasUninitializedTaint(node: KubeObject): boolean {
  return taintsOf(node).some((t) => t.key === UNINITIALIZED_TAINT);
}

export function providerIDOf(node: KubeObject): string {
  return (node.spec as { providerID?: string } | undefined)?.providerID ?? '';
}

/** The node's Ready condition is True (a node without one counts as Unknown, as in nodeutil.GetNodeCondition). */
export function nodeReady(node: KubeObject): boolean {
  const conditions = (node.status as { conditions?: { type: string; status: string }[] } | undefined)
    ?.conditions;
  return conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
