/** Reading the cluster the way every step needs it: nodes, their roles and readiness, mirror pods. */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { PreflightFailedError, VerificationFailedError } from '../errors.ts';
import { call, orNotFound } from '../kube/errors.ts';
import { latest, type WakeOn, waitFor, wakeOnObject } from '../kube/wait.ts';
import { UNINITIALIZED_TAINT } from '../kube/well-known.ts';
import type { StepContext } from './context.ts';

/** What reading the cluster takes. */
export type ClusterAccess = Pick<StepContext, 'clients'>;

/** kubeadm labels control-plane nodes with this (and, before 1.24, node-role.kubernetes.io/master). */
const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

/**
 * Every node, in pages of 500. `keep` may cut each node down to what the caller reads as its page comes
 * in, so that a 5,000-node cluster is never held whole (a drift check keeps four fields of each).
 */
export async function listNodes(
  ctx: ClusterAccess,
  keep: (node: V1Node) => V1Node = (node) => node,
): Promise<V1Node[]> {
  const nodes: V1Node[] = [];
  let _continue: string | undefined;
  do {
    const page = await call(`list nodes at ${ctx.clients.server}`, () =>
      ctx.clients.core.listNode({ limit: 500, ...(_continue ? { _continue } : {}) }),
    );
    for (const node of page.items) nodes.push(keep(node));
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return nodes;
}

export async function readNode(ctx: ClusterAccess, name: string): Promise<V1Node> {
  return call(`read node ${name}`, () => ctx.clients.core.readNode({ name }));
}

/** Changes of node `name`: what ends a wait on it. */
export function nodeChanges(ctx: ClusterAccess, name: string): WakeOn {
  return wakeOnObject(ctx.clients, '/api/v1/nodes', name);
}

/** Why a run stops when a Node it started with is gone. */
export function nodeDeletedMessage(names: readonly string[]): string {
  return `node ${names.join(', ')} was deleted during the run (a cloud controller's node-lifecycle controller deletes a NotReady node whose instance lookup says it does not exist): the run stops here`;
}

/**
 * Wait until node `name` is Ready (after its kubelet restarted). A Node deleted meanwhile (by a cloud
 * controller, while NotReady) stops the run; on the way back (`reregisters`) its kubelet, restarted with
 * its old flags, registers it again, and that is waited for.
 */
export async function waitForNodeReady(
  ctx: StepContext,
  name: string,
  opts: { reregisters?: boolean } = {},
): Promise<void> {
  await waitFor(
    `node ${name} to be Ready`,
    async (event) => {
      const node = await latest(event, () => orNotFound(readNode(ctx, name)));
      if (!node && !opts.reregisters) throw new VerificationFailedError(nodeDeletedMessage([name]));
      return node !== undefined && isNodeReady(node);
    },
    {
      ...ctx,
      wakeOn: nodeChanges(ctx, name),
    },
  );
}

export function nodeName(node: V1Node): string {
  return node.metadata?.name ?? '';
}

export function isControlPlane(node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  return CONTROL_PLANE_LABELS.some((label) => label in labels);
}

export function isNodeReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export function hasUninitializedTaint(node: V1Node): boolean {
  return node.spec?.taints?.some((t) => t.key === UNINITIALIZED_TAINT) ?? false;
}

/** kubelet names a static pod's mirror pod `<pod name>-<node name>`. */
/** Changes of `component`'s mirror pod on `node`. */
function mirrorPodChanges(ctx: ClusterAccess, component: string, node: string): WakeOn {
  return wakeOnObject(ctx.clients, '/api/v1/namespaces/kube-system/pods', `${component}-${node}`);
}

/** Wait until `component`'s mirror pod on `node` is Ready and `ok` (it runs the flags wanted). */
export async function waitForMirrorPod(
  ctx: StepContext,
  component: string,
  node: string,
  what: string,
  ok: (pod: V1Pod) => boolean,
): Promise<void> {
  await waitFor(
    `${component} on ${node} to run ${what}`,
    async (change) => {
      const pod = await latest(change, () => readMirrorPod(ctx, component, node));
      return pod !== undefined && isPodReady(pod) && ok(pod);
    },
    { ...ctx, wakeOn: mirrorPodChanges(ctx, component, node) },
  );
}

export async function readMirrorPod(
  ctx: ClusterAccess,
  component: string,
  node: string,
): Promise<V1Pod | undefined> {
  return orNotFound(
    call(`read ${component} on ${node}`, () =>
      ctx.clients.core.readNamespacedPod({ name: `${component}-${node}`, namespace: 'kube-system' }),
    ),
  );
}

export function isPodReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The control-plane component a mirror pod runs: kubeadm's `component` label, kops' `k8s-app`. */
export function componentOf(pod: V1Pod): string | undefined {
  const labels = pod.metadata?.labels ?? {};
  return labels.component ?? labels['k8s-app'];
}

/**
 * The command line of the pod's component container, as the binary sees it: the container named after
 * the component (a static pod may carry sidecars, such as kops' healthcheck or a KMS plugin, in any
 * order), or the only container. A pod where neither tells is refused: reading a sidecar's flags would
 * take a kube-controller-manager for one without its provider.
 */
export function commandLine(pod: V1Pod): string[] {
  const containers = pod.spec?.containers ?? [];
  const component = componentOf(pod);
  const c =
    containers.find((x) => x.name === component) ?? (containers.length === 1 ? containers[0] : undefined);
  if (!c) {
    throw new PreflightFailedError(
      `cannot tell which container of pod ${pod.metadata?.namespace}/${pod.metadata?.name} runs ${component ?? 'its component'}: containers ${containers.map((x) => x.name).join(', ')}; ccm-migrate reads the one named after the pod's component label`,
    );
  }
  return [...(c.command ?? []), ...(c.args ?? [])];
}
