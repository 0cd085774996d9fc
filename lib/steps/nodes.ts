/**
 * Steps 3 and 5: one control-plane node's kube-apiserver and kube-controller-manager, and one node's
 * kubelet, moved off the in-tree provider through the node agent. The agent leaves a file that is already
 * as desired alone, so a retried or resumed step only waits for what it changed before.
 */
import type { AgentRequest, StaticPodEdit } from '../agent/protocol.ts';
import { booleanFlag, parseFlags } from '../controlplane/flags.ts';
import { commandLine, waitForMirrorPod, waitForNodeReady } from './cluster.ts';
import type { StepContext } from './context.ts';
import {
  ENABLE_LEADER_MIGRATION_STATIC_PODS,
  KAS_MANIFEST,
  KCM_MANIFEST,
  toExternalKubelet,
  toExternalStaticPods,
} from './edits.ts';
import { acrossOwnRestart } from './endpoint.ts';
import { LEADER_MIGRATION_FLAG } from './leader-migration.ts';
import { besidePrestart, prestartNext, wasPrestarted } from './prestart.ts';
import { confirmRunningKubelet } from './running-kubelet.ts';
import type { NodeEvent } from './schemas.ts';
import type { Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';

type Wanted = Record<string, (flags: Map<string, string>) => boolean>;

const COMPONENTS: Readonly<Record<string, string>> = {
  [KAS_MANIFEST]: 'kube-apiserver',
  [KCM_MANIFEST]: 'kube-controller-manager',
};

/** What each component's running flags must say once its manifest's edit is in effect. */
function movedBy(edits: readonly StaticPodEdit[]): Wanted {
  return Object.fromEntries(
    edits.map((e) => [
      COMPONENTS[e.path] ?? e.path,
      (f: Map<string, string>) =>
        Object.entries(e.flags).every(([name, value]) =>
          value === null ? !f.has(name) : f.get(name) === value,
        ),
    ]),
  );
}

/** Leader migration phase 1: kube-controller-manager runs it, whatever its provider (a resumed run may be past it). */
const MIGRATING: Wanted = {
  'kube-controller-manager': (f) => booleanFlag(f, LEADER_MIGRATION_FLAG, false),
};

function setStaticPods(runId: string, edits: readonly StaticPodEdit[]): AgentRequest {
  return { op: 'set-flags', runId, staticPods: [...edits] };
}

export async function moveControlPlaneNode(
  event: NodeEvent,
  ctx: StepContext,
): Promise<{ changed: boolean }> {
  const enabling = event.phase === 'enable-leader-migration';
  const edits = enabling
    ? ENABLE_LEADER_MIGRATION_STATIC_PODS
    : toExternalStaticPods(await loadSnapshot(ctx, event));
  const move = async () => {
    const moved = await besidePrestart(
      editAndWait(event, ctx, edits),
      prestartNext(event, ctx, 'move-control-plane-node', () => setStaticPods(event.runId, edits)),
    );
    return moved;
  };
  if (!edits.some((e) => e.path === KAS_MANIFEST)) return move();
  return acrossOwnRestart(ctx, 'move-control-plane-node', event.node, move);
}

async function editAndWait(
  event: NodeEvent,
  ctx: StepContext,
  edits: readonly StaticPodEdit[],
): Promise<{ changed: boolean }> {
  const enabling = event.phase === 'enable-leader-migration';
  const result = await ctx.agent(event.node, setStaticPods(event.runId, edits), {
    prestarted: wasPrestarted(event),
  });
  const done = enabling ? 'leader migration already on' : 'manifests already external';
  ctx.progress({
    // Phase 1 reads as its own step in the progress output: the node is not moved yet.
    step: enabling ? 'enable-leader-migration' : 'move-control-plane-node',
    node: event.node,
    message: result.changed ? 'manifests rewritten, waiting for the new pods' : done,
    ...(result.changed ? { phase: 'static-pods-restart' as const } : {}),
  });
  for (const [component, moved] of Object.entries(enabling ? MIGRATING : movedBy(edits))) {
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

/** The agent request that flips `node`'s kubelet (its turn's, or its pre-start's). */
export function flipRequest(snapshot: Snapshot, runId: string, node: string): AgentRequest {
  return { op: 'set-flags', runId, kubelet: toExternalKubelet(snapshot, node) };
}

export async function flipKubelet(event: NodeEvent, ctx: StepContext): Promise<{ changed: boolean }> {
  const snapshot = await loadSnapshot(ctx, event);
  const request = (node: string) => flipRequest(snapshot, event.runId, node);
  const result = await besidePrestart(
    // The CCM's start pre-started the first batch (lib/steps/ccm.ts).
    ctx.agent(event.node, request(event.node), { prestarted: wasPrestarted(event, true) }),
    prestartNext(event, ctx, 'flip-kubelet', request),
  );
  ctx.progress({
    step: 'flip-kubelet',
    node: event.node,
    message: result.changed ? 'kubelet flags external, kubelet restarting' : 'kubelet already external',
    ...(result.changed ? { phase: 'kubelet-restart' as const } : {}),
  });
  await waitForNodeReady(ctx, event.node);
  await confirmRunningKubelet(event, ctx, result.kubeletFlags);
  return { changed: result.changed };
}
