/**
 * Steps 3 and 5: one control-plane node's kube-apiserver and kube-controller-manager, and one node's
 * kubelet, moved off the in-tree provider through the node agent. The agent leaves a file that is already
 * as desired alone, so a retried or resumed step only waits for what it changed before.
 */
import { booleanFlag, parseFlags } from '../controlplane/flags.ts';
import { commandLine, waitForMirrorPod, waitForNodeReady } from './cluster.ts';
import type { StepContext } from './context.ts';
import {
  ENABLE_LEADER_MIGRATION_STATIC_PODS,
  TO_EXTERNAL_KUBELET,
  TO_EXTERNAL_STATIC_PODS,
} from './edits.ts';
import { LEADER_MIGRATION_FLAG } from './leader-migration.ts';
import type { NodeEvent } from './schemas.ts';

type Wanted = Record<string, (flags: Map<string, string>) => boolean>;

/** What a component's running flags must say once it is off the in-tree provider. */
const MOVED: Wanted = {
  'kube-apiserver': (f) => !f.has('cloud-provider') && !f.has('cloud-config'),
  'kube-controller-manager': (f) =>
    f.get('cloud-provider') === 'external' && !f.has('cloud-config') && !f.has(LEADER_MIGRATION_FLAG),
};

/** Leader migration phase 1: kube-controller-manager runs it, whatever its provider (a resumed run may be past it). */
const MIGRATING: Wanted = {
  'kube-controller-manager': (f) => booleanFlag(f, LEADER_MIGRATION_FLAG, false),
};

export async function moveControlPlaneNode(
  event: NodeEvent,
  ctx: StepContext,
): Promise<{ changed: boolean }> {
  const enabling = event.phase === 'enable-leader-migration';
  const result = await ctx.agent(event.node, {
    op: 'set-flags',
    runId: event.runId,
    staticPods: [...(enabling ? ENABLE_LEADER_MIGRATION_STATIC_PODS : TO_EXTERNAL_STATIC_PODS)],
  });
  const done = enabling ? 'leader migration already on' : 'manifests already external';
  ctx.progress({
    // Phase 1 reads as its own step in the progress output: the node is not moved yet.
    step: enabling ? 'enable-leader-migration' : 'move-control-plane-node',
    node: event.node,
    message: result.changed ? 'manifests rewritten, waiting for the new pods' : done,
  });
  for (const [component, moved] of Object.entries(enabling ? MIGRATING : MOVED)) {
    // The mirror pod that runs the new flags and is Ready: kubelet restarted the static pod from the new file.
    await waitForMirrorPod(
      ctx,
      component,
      event.node,
      enabling ? 'with leader migration' : 'without the in-tree provider',
      (pod) => moved(parseFlags(commandLine(pod))),
    );
  }
  return { changed: result.changed };
}

export async function flipKubelet(event: NodeEvent, ctx: StepContext): Promise<{ changed: boolean }> {
  const result = await ctx.agent(event.node, {
    op: 'set-flags',
    runId: event.runId,
    kubelet: { ...TO_EXTERNAL_KUBELET, keepNodeName: event.node },
  });
  ctx.progress({
    step: 'flip-kubelet',
    node: event.node,
    message: result.changed ? 'kubelet flags external, kubelet restarting' : 'kubelet already external',
  });
  await waitForNodeReady(ctx, event.node);
  return { changed: result.changed };
}
