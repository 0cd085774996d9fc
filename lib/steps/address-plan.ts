/**
 * The cluster's node addresses after the flip, from each node's prediction (providers/node-addresses.ts):
 * what preflight records for verify, what plan and the progress output show, and the refusal of nodes the
 * CCM would never initialise (they would keep the uninitialized taint, and the run would roll back late).
 */
import type { V1Node } from '@kubernetes/client-node';
import { PreflightFailedError } from '../errors.ts';
import {
  type AddressPrediction,
  addressChanges,
  describeAddresses,
  type NodeAddress,
} from '../providers/node-addresses.ts';
import { nodeName } from './cluster.ts';

export interface AddressChange {
  readonly node: string;
  readonly added: NodeAddress[];
  readonly removed: NodeAddress[];
}

/** Each node's predicted addresses; throws PreflightFailedError naming every node the CCM would not initialise. */
export function expectedAddresses(
  predictions: Readonly<Record<string, AddressPrediction>>,
  ccmName: string,
): Record<string, NodeAddress[]> {
  const refused = Object.entries(predictions).flatMap(([node, p]) =>
    p.initialises ? [] : [`${node}: ${p.reason}`],
  );
  if (refused.length > 0) {
    throw new PreflightFailedError(
      `the ${ccmName} would never initialise ${refused.length} node(s), which would keep the uninitialized taint: ${refused.slice(0, 5).join('; ')}. ` +
        'Correct the kubelet’s --node-ip and run again',
    );
  }
  return Object.fromEntries(
    Object.entries(predictions).flatMap(([node, p]) => (p.initialises ? [[node, p.addresses]] : [])),
  );
}

/** The nodes whose addresses the CCM changes, and how, in node order. */
export function addressChangesOf(
  nodes: readonly V1Node[],
  expected: Readonly<Record<string, readonly NodeAddress[]>>,
): AddressChange[] {
  return nodes.flatMap((n) => {
    const node = nodeName(n);
    const after = expected[node];
    if (after === undefined) return [];
    const before = (n.status?.addresses ?? []).map(({ type, address }) => ({ type, address }));
    const { added, removed } = addressChanges(before, after);
    return added.length + removed.length > 0 ? [{ node, added, removed }] : [];
  });
}

/** The change in words for the progress output; undefined when no address changes. */
export function addressNote(changes: readonly AddressChange[]): string | undefined {
  if (changes.length === 0) return undefined;
  return `the cloud-controller-manager changes the addresses of ${changes.length} node(s) (see plan): verify expects that`;
}

/** One line per changed node (`node: - InternalIP a, + ExternalIP b`), and how many stay as they are. */
export function describeAddressChanges(changes: readonly AddressChange[], nodeCount: number): string[] {
  if (changes.length === 0) return ['node addresses after the flip: unchanged on every node'];
  const line = ({ node, added, removed }: AddressChange): string =>
    `  ${node}: ${[
      ...removed.map((a) => `- ${describeAddresses([a])}`),
      ...added.map((a) => `+ ${describeAddresses([a])}`),
    ].join(', ')}`;
  const unchanged = nodeCount - changes.length;
  return [
    `node addresses after the flip (as the cloud-controller-manager sets them), ${changes.length} node(s) change:`,
    ...changes.map(line),
    ...(unchanged > 0 ? [`  the addresses of ${unchanged} other node(s) unchanged`] : []),
  ];
}
