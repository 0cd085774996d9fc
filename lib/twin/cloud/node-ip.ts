/**
 * How a kubelet's --node-ip narrows a node's addresses, on either side of the flip: the in-tree kubelet
 * narrows what its provider lists itself and hands the node IP on in an annotation; an external kubelet
 * only hands it on, and the CCM's cloud-node controller narrows what the cloud lists.
 *
 * The twin's reading of upstream (kubelet pkg/kubelet/nodestatus/setters.go NodeAddress; component-helpers
 * node/util ParseNodeIPArgument and ParseNodeIPAnnotation; k8s.io/cloud-provider node/helpers/address.go
 * and controllers/node/node_controller.go, v1.25.16–v1.30.14):
 * - the kubelet ignores an entry of --node-ip it cannot read; it takes a dual-stack pair only without a
 *   cloud provider or, from 1.29 (CloudDualStackNodeIPs on by default), with `external`;
 * - a specific node IP (not 0.0.0.0 or ::) on a kubelet with any --cloud-provider is written to the Node's
 *   `alpha.kubernetes.io/provided-node-ip` annotation, which a later start without one removes;
 * - narrowing keeps, of each address type a node IP matches, only the matching addresses, listed first, and
 *   every address of the other types; a node IP the list does not hold is an error (the kubelet sets no
 *   addresses, the CCM refuses to initialise the Node and leaves its addresses alone);
 * - the CCM reads the annotation as one IP up to 1.26 (PreferNodeIP), and as one IP or, from 1.29, a
 *   dual-stack pair from 1.27 (GetNodeAddressesFromNodeIP); an annotation it cannot read is an error.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { NodeAddress } from './model.ts';

export const PROVIDED_NODE_IP = 'alpha.kubernetes.io/provided-node-ip';

/** An IP as Go's net.IP.String() writes it (ParseIPSloppy reads IPv4 octets with leading zeros as decimal). */
function goIP(text: string): string | undefined {
  if (isIPv6(text)) return new URL(`http://[${text}]/`).hostname.slice(1, -1);
  const octets = text.split('.');
  if (octets.length !== 4 || !octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) < 256)) return undefined;
  const ip = octets.map(Number).join('.');
  return isIPv4(ip) ? ip : undefined;
}

function pairProblem(ips: readonly string[], dualStackAllowed: boolean): string | undefined {
  if (ips.length > 2 || (ips.length === 2 && isIPv6(ips[0] ?? '') === isIPv6(ips[1] ?? ''))) {
    return 'must contain either a single IP or a dual-stack pair of IPs';
  }
  if (ips.length === 2 && !dualStackAllowed) return 'dual-stack not supported in this configuration';
  return undefined;
}

/** The kubelet's node IPs from --node-ip, or the error it exits with. */
export function kubeletNodeIPs(
  flag: string | undefined,
  cloudProvider: string,
  minor: number,
): { ips: string[] } | { error: string } {
  const ips = (flag ?? '')
    .split(',')
    .map((entry) => goIP(entry.trim()))
    .filter((ip) => ip !== undefined);
  const dualStack = cloudProvider === '' || (cloudProvider === 'external' && minor >= 29);
  const problem = pairProblem(ips, dualStack);
  return problem ? { error: `bad --node-ip ${JSON.stringify(flag)}: ${problem}` } : { ips };
}

/** Whether a node IP names an address (not 0.0.0.0 or ::, which only pick a family). */
export function specific(ip: string | undefined): ip is string {
  return ip !== undefined && ip !== '0.0.0.0' && ip !== '::';
}

/** The node IPs in a CCM's reading of the annotation, or undefined when it cannot read it. */
export function annotatedNodeIPs(annotation: string, ccmMinor: number): string[] | undefined {
  const entries = annotation.split(',');
  if (ccmMinor <= 26 && entries.length > 1) return undefined;
  const ips = entries.map(goIP);
  if (ips.some((ip) => ip === undefined)) return undefined;
  const read = ips as string[];
  return pairProblem(read, ccmMinor >= 29) === undefined ? read : undefined;
}

/** `addresses` narrowed to the node IPs, or undefined when one of them is not among them. */
export function narrowToNodeIPs(
  ips: readonly string[],
  addresses: readonly NodeAddress[],
): NodeAddress[] | undefined {
  const matched = ips.map((ip) => addresses.filter((a) => goIP(a.address) === ip));
  if (matched.some((m) => m.length === 0)) return undefined;
  const kept = matched.flat();
  const types = new Set(kept.map((a) => a.type));
  return [...kept, ...addresses.filter((a) => !types.has(a.type))];
}
