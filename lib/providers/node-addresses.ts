/**
 * A node's addresses after the flip, as the CCM's cloud-node controller will set them, predicted from what
 * the orchestrator can read: the Node's addresses now (the cloud's view, as the in-tree kubelet reported
 * it) and the --node-ip the kubelet starts with after the flip.
 *
 * Upstream behaviour relied on (k8s.io/cloud-provider of the CCM's minor, kubelet of the cluster's):
 * - an external kubelet with a specific --node-ip (not 0.0.0.0 or ::) annotates its Node
 *   `alpha.kubernetes.io/provided-node-ip` and leaves existing addresses alone (pkg/kubelet/nodestatus
 *   setters.go NodeAddress); it accepts a dual-stack pair only from 1.29 (CloudDualStackNodeIPs, beta and
 *   on by default in 1.29, GA in 1.30; component-helpers node/util ParseNodeIPArgument), else exits;
 * - the CCM's updateNodeAddress (controllers/node/node_controller.go) takes the cloud's addresses, keeps the
 *   Node's Hostname when the cloud gives none, and with the annotation keeps, of each address type a node IP
 *   matches, only the matching addresses, listed first (node/helpers/address.go: PreferNodeIP in 1.25 and
 *   1.26, which reads one IP; GetNodeAddressesFromNodeIP from 1.27, a dual-stack pair from 1.29);
 * - a node IP the cloud does not list makes the CCM refuse to initialise the Node ("provided node ip for
 *   node … is not valid"): it keeps its uninitialized taint for good.
 * The cloud's addresses are taken to be the Node's now: an address the in-tree kubelet filtered out (a
 * second network interface it hid behind --node-ip) is not known here, and shows in verify if it appears.
 */
import { isIPv6 } from 'node:net';

export interface NodeAddress {
  readonly type: string;
  readonly address: string;
}

export type AddressPrediction =
  | { readonly initialises: true; readonly addresses: NodeAddress[] }
  | { readonly initialises: false; readonly reason: string };

/** An IP in one spelling (Go's ParseIPSloppy reads leading zeros in IPv4 as decimal), else undefined. */
export function canonicalIP(text: string): string | undefined {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const octets = v4.slice(1).map(Number);
    return octets.every((o) => o <= 255) ? octets.join('.') : undefined;
  }
  return isIPv6(text) ? new URL(`http://[${text}]/`).hostname.slice(1, -1) : undefined;
}

const UNSPECIFIED = new Set(['0.0.0.0', '::']);

/**
 * The node IPs the external kubelet hands the CCM through its annotation (none for an unspecified or
 * unreadable --node-ip: the kubelet logs and ignores unreadable entries), or why it would not start.
 */
function providedNodeIPs(nodeIP: string, minor: number): string[] | { refused: string } {
  const ips = nodeIP
    .split(',')
    .map((ip) => canonicalIP(ip.trim()))
    .filter((ip) => ip !== undefined);
  if (ips.length > 2 || (ips.length === 2 && isIPv6(ips[0] ?? '') === isIPv6(ips[1] ?? ''))) {
    return { refused: `--node-ip=${nodeIP} must be one IP or a dual-stack pair` };
  }
  if (ips.length === 2 && minor < 29) {
    return {
      refused: `--node-ip=${nodeIP} is a dual-stack pair, which an external kubelet and cloud-controller-manager take from 1.29 only`,
    };
  }
  if (ips.some((ip) => UNSPECIFIED.has(ip)))
    return ips.length === 2 ? { refused: `--node-ip=${nodeIP} pairs an unspecified address` } : [];
  return ips;
}

/** What the CCM of `minor` sets for a Node whose addresses are `current`, its kubelet started with `nodeIP`. */
export function predictNodeAddresses(input: {
  readonly minor: number;
  readonly current: readonly NodeAddress[];
  readonly nodeIP?: string | undefined;
}): AddressPrediction {
  const cloud = input.current.map(({ type, address }) => ({ type, address }));
  const provided = input.nodeIP === undefined ? [] : providedNodeIPs(input.nodeIP, input.minor);
  if (!Array.isArray(provided)) return { initialises: false, reason: provided.refused };
  const enforced: NodeAddress[] = [];
  const enforcedTypes = new Set<string>();
  for (const ip of provided) {
    const matches = cloud.filter((a) => canonicalIP(a.address) === ip);
    if (matches.length === 0) {
      return {
        initialises: false,
        reason: `its --node-ip ${ip} is not among the addresses the cloud reports (${describeAddresses(cloud)}): the cloud-controller-manager would never initialise it`,
      };
    }
    enforced.push(...matches);
    for (const a of matches) enforcedTypes.add(a.type);
  }
  return { initialises: true, addresses: [...enforced, ...cloud.filter((a) => !enforcedTypes.has(a.type))] };
}

export function describeAddresses(addresses: readonly NodeAddress[]): string {
  return addresses.length === 0 ? 'none' : addresses.map((a) => `${a.type} ${a.address}`).join(', ');
}

/** What `after` adds to and drops from `before`, as sets of type and address (the CCM's order aside). */
export function addressChanges(
  before: readonly NodeAddress[],
  after: readonly NodeAddress[],
): { added: NodeAddress[]; removed: NodeAddress[] } {
  const key = (a: NodeAddress) => `${a.type}/${a.address}`;
  const had = new Set(before.map(key));
  const has = new Set(after.map(key));
  return { added: after.filter((a) => !had.has(key(a))), removed: before.filter((a) => !has.has(key(a))) };
}
