/**
 * Whether the API endpoint ccm-migrate talks to is one control-plane node (kubeadm's admin.conf names the
 * first node's address, not a load balancer): then that node's kube-apiserver restart cuts the run off from
 * the cluster (kubeone#2324 hung there). Told by the kubeconfig server's host against the control-plane
 * Nodes' addresses and their kube-apiserver's advertised address (kubeadm's endpoint annotation on the
 * mirror pod, or its --advertise-address). Exactly one node must match; anything else (a load balancer,
 * a VIP, a name no node carries) cannot be told, and the run goes as it always did.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parseFlags } from '../controlplane/flags.ts';
import { PreflightFailedError } from '../errors.ts';
import { call } from '../kube/errors.ts';
import { acrossOutages } from '../kube/wait.ts';
import {
  type ClusterAccess,
  commandLine,
  isControlPlane,
  nodeName,
  readMirrorPod,
  readNode,
} from './cluster.ts';
import type { StepContext } from './context.ts';

/** The kube-apiserver endpoint kubeadm records on its mirror pod, `<address>:<port>`. */
export const ADVERTISE_ADDRESS_ANNOTATION = 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint';

/** The control-plane node the API endpoint is, and what said so. */
export interface PinnedEndpoint {
  readonly node: string;
  /** The kubeconfig server's host. */
  readonly host: string;
  /** Where the node carries that address: an address type (InternalIP, Hostname …) or the API server's. */
  readonly by: string;
}

/** A URL's host as compared: brackets of an IPv6 address off, lower case. */
function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase() || undefined;
  } catch {
    return undefined;
  }
}

/** `address:port` or `[v6]:port` without its port. */
function withoutPort(endpoint: string): string {
  return endpoint.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
}

/** The addresses a control-plane node answers the API on, each with where it comes from. */
function nodeAddresses(node: V1Node, apiServer: V1Pod | undefined): [address: string, by: string][] {
  const found: [string, string][] = (node.status?.addresses ?? []).map((a) => [a.address, a.type]);
  const endpoint = apiServer?.metadata?.annotations?.[ADVERTISE_ADDRESS_ANNOTATION];
  if (endpoint) found.push([withoutPort(endpoint), 'kube-apiserver advertise address']);
  if (apiServer) {
    try {
      const advertised = parseFlags(commandLine(apiServer)).get('advertise-address');
      if (advertised) found.push([advertised, 'kube-apiserver --advertise-address']);
    } catch (err) {
      // A pod whose kube-apiserver container cannot be told says nothing of its address.
      if (!(err instanceof PreflightFailedError)) throw err;
    }
  }
  return found.map(([address, by]) => [address.toLowerCase(), by]);
}

/**
 * The node among `controlPlane` whose address is the server's host, when exactly one is; `apiServers` are
 * their kube-apiserver mirror pods (by spec.nodeName).
 */
export function pinnedNodeOf(
  server: string,
  controlPlane: readonly V1Node[],
  apiServers: readonly V1Pod[],
): PinnedEndpoint | undefined {
  const host = hostOf(server);
  if (!host) return undefined;
  const matches = controlPlane.flatMap((node) => {
    const pod = apiServers.find((p) => p.spec?.nodeName === nodeName(node));
    const hit = nodeAddresses(node, pod).find(([address]) => address === host);
    return hit ? [{ node: nodeName(node), host, by: hit[1] }] : [];
  });
  return matches.length === 1 ? matches[0] : undefined;
}

/** The control-plane node the clients' server is, among `nodes` (every node of the cluster). */
export async function pinnedEndpoint(
  ctx: ClusterAccess,
  nodes: readonly V1Node[],
): Promise<PinnedEndpoint | undefined> {
  const controlPlane = nodes.filter(isControlPlane);
  const pods = await call('list the kube-apiserver pods', () =>
    ctx.clients.core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'component=kube-apiserver',
    }),
  );
  return pinnedNodeOf(ctx.clients.server, controlPlane, pods.items);
}

/** Whether the clients' server is an address of control-plane node `node`: two reads, for that node's step. */
export async function endpointIsNode(ctx: ClusterAccess, node: string): Promise<boolean> {
  const [found, pod] = await Promise.all([readNode(ctx, node), readMirrorPod(ctx, 'kube-apiserver', node)]);
  return pinnedNodeOf(ctx.clients.server, [found], pod ? [pod] : [])?.node === node;
}

/**
 * Run `work` (idempotent), which restarts control-plane node `node`'s kube-apiserver: when the API endpoint
 * is that node, its own outage is waited out within the invocation's deadline instead of failing the step.
 */
export async function acrossOwnRestart<T>(
  ctx: StepContext,
  step: string,
  node: string,
  work: () => Promise<T>,
): Promise<T> {
  if (!(await endpointIsNode(ctx, node))) return work();
  ctx.progress({
    step,
    node,
    message: `the API endpoint ${ctx.clients.server} is this node: its kube-apiserver's restart is waited out`,
  });
  return acrossOutages(ctx.clients, work, ctx);
}

/** The plan's and the progress output's words for a pinned endpoint. */
export function pinnedNote(pinned: PinnedEndpoint): string {
  return (
    `the API endpoint ${pinned.host} is control-plane node ${pinned.node} (its ${pinned.by}), not a load balancer: ` +
    `${pinned.node} restarts last, and the run waits out its own kube-apiserver's restart`
  );
}

/** The control-plane nodes in restart order: the pinned endpoint's node last. */
export function restartOrder(controlPlane: readonly string[], pinned: PinnedEndpoint | undefined): string[] {
  if (!pinned || !controlPlane.includes(pinned.node)) return [...controlPlane];
  return [...controlPlane.filter((n) => n !== pinned.node), pinned.node];
}
