/**
 * The way back, shared by the downgrade and by an upgrade's rollback: each step puts back what the source
 * run changed, from the node agent's backups of that run (the original bytes) and its snapshot. Reverse
 * order keeps the cloud-controller invariants: kubelets go back in-tree first (no node registers tainted
 * from then on), the CCM stops, and only then does each kube-controller-manager take the cloud loops back,
 * one node at a time (never two controllers; while none runs, no node waits for one).
 */

import { type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import type { AgentRequest, AgentResult } from '../agent/protocol.ts';
import { KUBELET_FILES } from '../controlplane/kubelet-sources.ts';
import { AgentFailedError, NotReadyYetError, VerificationFailedError } from '../errors.ts';
import { agentAccountObjects, removeAgentAccount } from '../kube/agent-account.ts';
import {
  AGENT_CONFIGMAP,
  agentJobName,
  cancelQueuedAgentJobs,
  forgetAgentBundle,
  unfinishedAgentJobs,
} from '../kube/agent-job.ts';
import { applyObjects, describeObject } from '../kube/apply.ts';
import { call, httpStatus, orNotFound } from '../kube/errors.ts';
import { deleteIfOurs } from '../kube/ownership.ts';
import { waitFor } from '../kube/wait.ts';
import { inTreeTarget, providerFacts } from '../providers/catalog.ts';
import { PLUGIN_CONFIG_PATH } from '../providers/image-credentials.ts';
import { ccmPods, ccmWorkloadOf, renderCcm } from './ccm.ts';
import {
  hasUninitializedTaint,
  isNodeReady,
  listNodes,
  readMirrorPod,
  readNode,
  waitForMirrorPod,
  waitForNodeReady,
} from './cluster.ts';
import type { StepContext } from './context.ts';
import { cloudProviderOf, controllerManagersNot, controlPlaneOf } from './controller-managers.ts';
import {
  CONTROL_PLANE_MANIFESTS,
  ENABLE_LEADER_MIGRATION_STATIC_PODS,
  KAS_MANIFEST,
  KCM_MANIFEST,
  TO_EXTERNAL_KUBELET,
  toExternalKubeadm,
} from './edits.ts';
import { acrossOwnRestart } from './endpoint.ts';
import { revertKubeadmConfig, revertKubeletConfigMap } from './kubeadm-config.ts';
import { runsLeaderMigration } from './leader-migration.ts';
import { besidePrestart, prestartNext, wasPrestarted } from './prestart.ts';
import type { RestoreEvent, RestoreNodeEvent, Verification } from './schemas.ts';
import { recordedOriginals, type Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';
import { removeUninitializedTaint } from './verify-node.ts';

/** The kubelet flags a node had before the source run: those of any node's kubelet flag source. */
function inTreeKubeletFlags(snapshot: Snapshot): Record<string, string> {
  for (const reports of Object.values(snapshot.files)) {
    const source = reports.find((f) => f.kind === 'kubelet-env' && f.flags?.['cloud-provider']);
    if (source?.flags) {
      const { 'cloud-provider': provider, 'cloud-config': config } = source.flags;
      return {
        ...(provider ? { 'cloud-provider': provider } : {}),
        ...(config ? { 'cloud-config': config } : {}),
      };
    }
  }
  return { 'cloud-provider': inTreeTarget(snapshot.provider) };
}

/** The agent request that puts `node`'s kubelet back (its turn's, or its pre-start's). */
function kubeletRestoreRequest(snapshot: Snapshot, sourceRunId: string, node: string): AgentRequest {
  return {
    op: 'restore',
    runId: sourceRunId,
    // The credential plugin's config after the flags that name it: it goes once no flag points at it.
    paths: [...KUBELET_FILES, PLUGIN_CONFIG_PATH],
    skipMissing: true,
    expected: recordedOriginals(snapshot, node),
  };
}

export async function restoreKubelet(
  event: RestoreNodeEvent,
  ctx: StepContext,
): Promise<{ changed: boolean; queued?: true }> {
  const snapshot = await loadSnapshot(ctx, event);
  const request = (node: string) => kubeletRestoreRequest(snapshot, event.sourceRunId, node);
  const restore = request(event.node);
  // A flip of this run still queued on the node (its batch failed while it waited) goes before the
  // restore; one that comes later is refused by the agent (kubeletRestoredMarker).
  await cancelQueuedAgentJobs(ctx.clients, event.node, 'restore');
  let result: AgentResult;
  try {
    result = await besidePrestart(
      ctx.agent(event.node, restore, { prestarted: wasPrestarted(event) }),
      prestartNext(event, ctx, 'restore-kubelet', request),
    );
  } catch (err) {
    if (!(err instanceof NotReadyYetError) || isNodeReady(await readNode(ctx, event.node))) throw err;
    await cancelQueuedAgentJobs(ctx.clients, event.node, 'restore');
    // The agent waited its full time and the node is still not Ready: its kubelet runs no pods, so no
    // agent can reach it now. The restore Job stays, pinned to the node: the kubelet runs it as soon as
    // it returns, and the node comes back in-tree. The rest of the cluster need not wait for that.
    ctx.progress({
      step: 'restore-kubelet',
      node: event.node,
      message: `kubelet not running: restore queued as Job kube-system/${agentJobName(event.node, restore)}, it runs when the kubelet returns`,
    });
    return { changed: false, queued: true };
  }
  if (result.files.length === 0 && snapshot.nodes[event.node] === undefined) {
    // A node that joined after the source run has no backups: give its kubelet the in-tree flags.
    result = await ctx.agent(event.node, {
      op: 'set-flags',
      runId: event.runId,
      kubelet: { flags: inTreeKubeletFlags(snapshot) },
    });
  }
  ctx.progress({
    step: 'restore-kubelet',
    node: event.node,
    message: result.changed
      ? 'kubelet flags restored, kubelet restarting'
      : 'kubelet flags already as before',
    ...(result.changed ? { phase: 'kubelet-restart' as const } : {}),
  });
  await waitForNodeReady(ctx, event.node, { reregisters: true });
  // In-tree, nothing clears the uninitialized taint: one left by verify-node (a batch cut short) or by a
  // node that registered while external must not keep the node unschedulable.
  await removeUninitializedTaint(ctx, event.node);
  return { changed: result.changed };
}

/**
 * Scale the CCM to zero (a DaemonSet: select no node) and wait until none of its pods is left: from here no
 * CCM runs the cloud loops.
 */
export async function stopCcm(event: RestoreEvent, ctx: StepContext): Promise<{ changed: boolean }> {
  const snapshot = await loadSnapshot(ctx, event);
  const workload = ccmWorkloadOf(renderCcm(snapshot, 0)) as KubernetesObject;
  const exists =
    (await orNotFound(
      call(`read ${describeObject(workload)}`, () => ctx.clients.objects.read(workload as never)),
    )) !== undefined;
  const changed = exists && (await applyObjects(ctx.clients, [workload])).some((a) => a.changed);
  await waitFor('every CCM pod to be gone', async () => (await ccmPods(ctx, snapshot)).length === 0, ctx);
  ctx.progress({ step: 'stop-ccm', message: exists ? 'CCM stopped' : 'no CCM deployed' });
  return { changed };
}

/** The cloud flags a component's manifest had in the snapshot, as its running pod must show them again. */
function expectedProvider(snapshot: Snapshot, node: string, manifest: string): string | undefined {
  return snapshot.files[node]?.find((f) => f.path === manifest)?.flags?.['cloud-provider'];
}

export async function restoreControlPlaneNode(
  event: RestoreNodeEvent,
  ctx: StepContext,
): Promise<{ changed: boolean }> {
  return acrossOwnRestart(ctx, 'restore-control-plane-node', event.node, () => restoreAndWait(event, ctx));
}

async function restoreAndWait(event: RestoreNodeEvent, ctx: StepContext): Promise<{ changed: boolean }> {
  const snapshot = await loadSnapshot(ctx, event);
  // The CCM's copy of the cloud config goes too (its backup is "absent"): the node's files end as before.
  const copy = snapshot.cloudConfigTranslation?.target;
  const request = (node: string): AgentRequest => ({
    op: 'restore',
    runId: event.sourceRunId,
    paths: [...CONTROL_PLANE_MANIFESTS, ...(copy ? [copy] : [])],
    skipMissing: true,
    expected: recordedOriginals(snapshot, node),
    staticPods: event.leaderMigration ? [...ENABLE_LEADER_MIGRATION_STATIC_PODS] : [],
  });
  const result = await besidePrestart(
    ctx.agent(event.node, request(event.node), { prestarted: wasPrestarted(event) }),
    prestartNext(event, ctx, 'restore-control-plane-node', request),
  );
  ctx.progress({
    step: 'restore-control-plane-node',
    node: event.node,
    message: result.changed ? 'manifests restored, waiting for the pods' : 'manifests already as before',
    ...(result.changed ? { phase: 'static-pods-restart' as const } : {}),
  });
  for (const [component, manifest] of [
    ['kube-apiserver', KAS_MANIFEST],
    ['kube-controller-manager', KCM_MANIFEST],
  ] as const) {
    const wanted = expectedProvider(snapshot, event.node, manifest);
    const backedUp = result.files.some((f) => f.path === manifest);
    if (!backedUp) {
      const pod = await readMirrorPod(ctx, component, event.node);
      if (pod && cloudProviderOf(pod) !== wanted) {
        throw new AgentFailedError(
          `${event.node}:${manifest} was changed but run ${event.sourceRunId} has no backup of it: put --cloud-provider=${wanted ?? '(none)'} back by hand`,
        );
      }
    }
    await waitForMirrorPod(
      ctx,
      component,
      event.node,
      `with --cloud-provider=${wanted ?? '(none)'} again${event.leaderMigration && component === 'kube-controller-manager' ? ', under leader migration' : ''}`,
      (pod) =>
        cloudProviderOf(pod) === wanted &&
        (component !== 'kube-controller-manager' || runsLeaderMigration(pod) === event.leaderMigration),
    );
  }
  return { changed: result.changed };
}

async function deleteIfPresent(ctx: StepContext, obj: KubernetesObject): Promise<boolean> {
  try {
    await call(`delete ${describeObject(obj)}`, () => ctx.clients.objects.delete(obj as never));
    return true;
  } catch (err) {
    if (httpStatus(err) === 404) return false;
    throw err;
  }
}

/**
 * Delete the agent's ConfigMap, and the pre-started agents' account and go ConfigMap, unless restores are
 * queued on nodes that are down: their Jobs still need them (a queued one may be pre-started). They are
 * then handed to those Jobs (owner references), and the garbage collector removes them with the last. How
 * many objects went.
 */
async function releaseAgentCode(ctx: StepContext): Promise<number> {
  const agentCode = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: AGENT_CONFIGMAP, namespace: 'kube-system' },
  };
  const queued = await unfinishedAgentJobs(ctx.clients);
  if (queued.length === 0) {
    const deleted = await deleteIfPresent(ctx, agentCode);
    forgetAgentBundle(ctx.clients);
    return (await removeAgentAccount(ctx.clients)) + (deleted ? 1 : 0);
  }
  const ownerReferences = queued.map((job) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    name: job.metadata?.name as string,
    uid: job.metadata?.uid as string,
  }));
  for (const obj of [agentCode, ...agentAccountObjects('kube-system')]) {
    const { apiVersion, kind, metadata } = obj;
    await call(`hand ${describeObject(obj)} to the queued agent Jobs`, () =>
      ctx.clients.objects.patch(
        {
          apiVersion,
          kind,
          metadata: { name: metadata?.name, namespace: metadata?.namespace, ownerReferences },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      ),
    ).catch((err: unknown) => {
      // Gone already, or (the account) never put there by this ClusterRole.
      if (httpStatus(err) !== 404 && httpStatus(err) !== 403) throw err;
    });
  }
  ctx.progress({
    step: 'remove-ccm',
    message: `agent code kept for ${queued.length} queued restore(s), removed with them`,
  });
  return 0;
}

/**
 * Remove what the source run put in the cluster: the CCM's objects, its Lease, the agent's code, and its
 * edit of kubeadm's ClusterConfiguration: the snapshot's original bytes when it still holds exactly what the
 * run wrote; when changed since (an operator's extraArg, certSANs, ...), only the in-tree flags, gates and
 * cloud-config volumes the run took out are put back, so that the later changes survive.
 */
export async function removeCcm(event: RestoreEvent, ctx: StepContext): Promise<{ removed: number }> {
  const snapshot = await loadSnapshot(ctx, event);
  const facts = providerFacts(snapshot.provider);
  // The CCM's Lease carries no label (its processes made it), but it is the CCM's own, by its name.
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: facts.leaseName, namespace: facts.namespace },
  };
  // kubeadm-config first: one the operator left unreadable fails the step before anything is deleted.
  if (
    snapshot.kubeadmClusterConfiguration !== undefined &&
    (await revertKubeadmConfig(ctx, snapshot.kubeadmClusterConfiguration, toExternalKubeadm(snapshot))) ===
      'merged'
  ) {
    ctx.progress({
      step: 'remove-ccm',
      message: 'kubeadm-config changed since the upgrade: in-tree settings put back, other changes kept',
    });
  }
  if (
    snapshot.kubeletConfiguration !== undefined &&
    (await revertKubeletConfigMap(ctx, snapshot.kubeletConfiguration, TO_EXTERNAL_KUBELET)) === 'left'
  ) {
    ctx.progress({
      step: 'remove-ccm',
      message:
        'kubelet-config changed since the upgrade: left as it is (the in-tree feature gates not put back)',
    });
  }
  let removed = 0;
  const leftAlone: string[] = [];
  for (const obj of renderCcm(snapshot, 0).reverse()) {
    const how = await deleteIfOurs(ctx.clients, obj);
    if (how === 'deleted') removed += 1;
    if (how === 'not ours') leftAlone.push(describeObject(obj));
  }
  if (await deleteIfPresent(ctx, lease)) removed += 1;
  removed += await releaseAgentCode(ctx);
  const kept = leftAlone.length ? `; left alone, not created by ccm-migrate: ${leftAlone.join(', ')}` : '';
  ctx.progress({ step: 'remove-ccm', message: `${removed} object(s) of ccm-migrate removed${kept}` });
  return { removed };
}

/** Back in-tree: every kube-controller-manager runs the provider again, every node is Ready and initialised. */
export async function verifyInTree(event: RestoreEvent, ctx: StepContext): Promise<Verification> {
  const snapshot = await loadSnapshot(ctx, event);
  const inTree = providerFacts(snapshot.provider).inTreeName;
  const [node] = await controllerManagersNot(ctx, snapshot, (pod) => cloudProviderOf(pod) === inTree);
  if (node !== undefined) {
    throw new VerificationFailedError(
      `kube-controller-manager on ${node} does not run --cloud-provider=${inTree}`,
    );
  }
  if ((await ccmPods(ctx, snapshot)).length > 0)
    throw new VerificationFailedError('a CCM pod still runs beside the in-tree controllers');
  const nodes = await waitFor(
    'every node Ready, initialised and untainted',
    async () => {
      const all = await listNodes(ctx);
      return all.every((n) => isNodeReady(n) && !hasUninitializedTaint(n) && n.spec?.providerID) && all;
    },
    ctx,
  );
  ctx.progress({
    step: 'verify-in-tree',
    message: `${nodes.length} nodes on the in-tree ${inTree} provider`,
  });
  return {
    nodes: nodes.length,
    cloudController: `kube-controller-manager (${controlPlaneOf(snapshot).join(', ')})`,
    loadBalancers: snapshot.loadBalancers.length,
  };
}
