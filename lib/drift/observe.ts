/**
 * Observing a cluster for drift, read-only. Shallow: a fixed handful of list/get calls whatever the node
 * count (nodes in pages of 500, control-plane mirror pods and CCM pods by label, the CCM Deployment and
 * DaemonSet (an upgrade runs either), its Lease, kubeadm-config, agent Jobs, PersistentVolumes and
 * StorageClasses, and where one is in-tree CSIDrivers, CSINodes, VolumeAttachments and claims). Deep: also every node's
 * kubelet flag sources through the node agent (an inspect Job per node, batched: that creates and deletes
 * Jobs, the only writes a drift check makes).
 */
import type { V1DaemonSet, V1Deployment, V1Job, V1Lease, V1Node, V1Pod } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import type { FileReport } from '../agent/protocol.ts';
import { AGENT_NAME } from '../agent/protocol.ts';
import { call, orNotFound } from '../kube/errors.ts';
import type { ProviderFacts } from '../providers/catalog.ts';
import { CCM_LABEL_SELECTOR } from '../providers/render.ts';
import { listNodes } from '../steps/cluster.ts';
import { readClusterConfiguration } from '../steps/kubeadm-config.ts';
import type { ExamineContext } from '../steps/preflight.ts';
import { observeStorage } from '../steps/storage.ts';
import type { StorageInventory } from '../steps/storage-inventory.ts';
import { pendingClaimClasses } from './storage.ts';

export interface ClusterObservation {
  readonly kubernetesVersion: string;
  /** Each node's name, creation time, providerID and taints: what the findings read (slimNode). */
  readonly nodes: readonly V1Node[];
  /** kube-apiserver and kube-controller-manager mirror pods (kubeadm labels them tier=control-plane). */
  readonly controlPlanePods: readonly V1Pod[];
  readonly ccmDeployment?: V1Deployment;
  /** The CCM when an upgrade ran it as a DaemonSet (same name as the Deployment). */
  readonly ccmDaemonSet?: V1DaemonSet;
  readonly ccmPods: readonly V1Pod[];
  readonly ccmLease?: V1Lease;
  readonly clusterConfiguration?: string;
  readonly agentJobs: readonly V1Job[];
  /** In-tree volumes and StorageClasses, and the CSI drivers that serve them. */
  readonly storage: StorageInventory;
  /** StorageClasses named by claims waiting for a volume (read only when an in-tree class exists). */
  readonly pendingClaimClasses: readonly string[];
  /** Deep only: each node's kubelet flag sources as the agent reads them. */
  readonly kubeletFiles?: Readonly<Record<string, readonly FileReport[]>>;
}

/** What drift reads of a node; the rest of each page is dropped as it comes in. */
function slimNode(node: V1Node): V1Node {
  const { name, creationTimestamp } = node.metadata ?? {};
  const { providerID, taints, unschedulable } = node.spec ?? {};
  return {
    metadata: { ...(name ? { name } : {}), ...(creationTimestamp ? { creationTimestamp } : {}) },
    spec: {
      ...(providerID ? { providerID } : {}),
      ...(taints ? { taints } : {}),
      ...(unschedulable ? { unschedulable } : {}),
    },
  };
}

/** Agent Jobs at once in a deep check. */
const DEEP_CONCURRENCY = 10;

export async function observeCluster(
  ctx: ExamineContext,
  facts: ProviderFacts,
  opts: { deep: boolean; runId: string },
): Promise<ClusterObservation> {
  const { core, apps, batch, coordination, version } = ctx.clients;
  const ns = facts.namespace;
  const [
    info,
    nodes,
    controlPlane,
    ccmPods,
    ccmDeployment,
    ccmDaemonSet,
    ccmLease,
    clusterConfiguration,
    jobs,
  ] = await Promise.all([
    call('read the version', () => version.getCode()),
    listNodes(ctx, slimNode),
    call('list control-plane pods', () =>
      core.listNamespacedPod({ namespace: 'kube-system', labelSelector: 'tier=control-plane' }),
    ),
    call('list CCM pods', () => core.listNamespacedPod({ namespace: ns, labelSelector: CCM_LABEL_SELECTOR })),
    orNotFound(
      call('read the CCM', () =>
        apps.readNamespacedDeployment({ name: facts.deploymentName, namespace: ns }),
      ),
    ),
    orNotFound(
      call('read the CCM DaemonSet', () =>
        apps.readNamespacedDaemonSet({ name: facts.deploymentName, namespace: ns }),
      ),
    ),
    orNotFound(
      call('read the CCM lease', () =>
        coordination.readNamespacedLease({ name: facts.leaseName, namespace: ns }),
      ),
    ),
    readClusterConfiguration(ctx),
    // Where ccm-migrate runs them (lib/kube/agent-job.ts): no need to read Jobs in every namespace.
    call('list agent Jobs', () =>
      batch.listNamespacedJob({
        namespace: 'kube-system',
        labelSelector: `app.kubernetes.io/name=${AGENT_NAME}`,
      }),
    ),
  ]);
  const storage = await observeStorage(ctx, nodes);
  const pendingClasses = await pendingClaimClasses(ctx, storage);
  let kubeletFiles: Record<string, FileReport[]> | undefined;
  if (opts.deep) {
    const limit = pLimit(DEEP_CONCURRENCY);
    kubeletFiles = {};
    const out = kubeletFiles;
    await Promise.all(
      nodes.map((node) =>
        limit(async () => {
          const name = node.metadata?.name ?? '';
          out[name] = (await ctx.agent(name, { op: 'inspect', runId: opts.runId, paths: [] })).files;
        }),
      ),
    );
  }
  return {
    kubernetesVersion: info.gitVersion,
    nodes,
    controlPlanePods: controlPlane.items,
    ...(ccmDeployment ? { ccmDeployment } : {}),
    ...(ccmDaemonSet ? { ccmDaemonSet } : {}),
    ccmPods: ccmPods.items,
    ...(ccmLease ? { ccmLease } : {}),
    ...(clusterConfiguration !== undefined ? { clusterConfiguration } : {}),
    agentJobs: jobs.items,
    storage,
    pendingClaimClasses: pendingClasses,
    ...(kubeletFiles ? { kubeletFiles } : {}),
  };
}
