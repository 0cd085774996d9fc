/**
 * The kubelet's --config-dir drop-ins against the flip (issue 15, item 6): ccm-migrate takes the in-tree
 * gates out of the files it edits, but a drop-in that sets one is merged after the config file, so once
 * the flags no longer give the gate (flags win over drop-ins) the drop-in's value is in force: the
 * kubelet would keep a gate that 1.31 locks and 1.33 no longer knows, and the next upgrade would fail.
 * Preflight refuses such a node, and a drop-in it cannot read, before any change.
 */
import type { AgentResult } from '../agent/protocol.ts';
import { TO_EXTERNAL_KUBELET } from './edits.ts';

const FLIPPED_GATES = new Set(Object.keys(TO_EXTERNAL_KUBELET.featureGates));

/** What the node's drop-ins set that the flip would leave in force, as "node: …" lines. */
export function dropInsInTheWay(node: string, dropIns: AgentResult['kubeletDropIns']): string[] {
  return (dropIns ?? []).flatMap((d) => {
    if (d.error !== undefined) {
      return [`${node}: ${d.path} (a --config-dir drop-in) cannot be read: ${d.error}`];
    }
    const gates = (d.featureGates ?? '')
      .split(',')
      .filter((g) => FLIPPED_GATES.has(g.split('=')[0]?.trim() ?? ''));
    return gates.map((g) => `${node}: feature gate ${g} from the --config-dir drop-in ${d.path}`);
  });
}
