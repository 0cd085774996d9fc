/** Which control-plane nodes' kube-controller-managers run as a step needs them to (provider, leader migration). */
import type { V1Pod } from '@kubernetes/client-node';
import { parseFlags } from '../controlplane/flags.ts';
import { type ClusterAccess, commandLine, isPodReady, readMirrorPod } from './cluster.ts';
import type { Snapshot } from './snapshot.ts';

/** The run's control-plane nodes, as the snapshot recorded them. */
export function controlPlaneOf(snapshot: Pick<Snapshot, 'nodes'>): string[] {
  return Object.entries(snapshot.nodes)
    .filter(([, n]) => n.role === 'control-plane')
    .map(([name]) => name);
}

/** The --cloud-provider a control-plane pod runs with, if any. */
export function cloudProviderOf(pod: V1Pod): string | undefined {
  return parseFlags(commandLine(pod)).get('cloud-provider');
}

/**
 * The control-plane nodes whose kube-controller-manager mirror pod is missing, not Ready, or not `ok`, in
 * the snapshot's order: none left means every one runs as wanted.
 */
export async function controllerManagersNot(
  ctx: ClusterAccess,
  snapshot: Pick<Snapshot, 'nodes'>,
  ok: (pod: V1Pod) => boolean,
): Promise<string[]> {
  const failing: string[] = [];
  for (const node of controlPlaneOf(snapshot)) {
    const pod = await readMirrorPod(ctx, 'kube-controller-manager', node);
    if (!pod || !isPodReady(pod) || !ok(pod)) failing.push(node);
  }
  return failing;
}
