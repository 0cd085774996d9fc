/**
 * Step 1, Preflight: everything that can be checked before the first change, then the snapshot that is the
 * way back. It changes nothing in the cluster: a failure here leaves the cluster exactly as it was.
 */
import type { V1Node } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import type { FileReport } from '../agent/protocol.ts';
import { AgentFailedError, PreflightFailedError } from '../errors.ts';
import { call } from '../kube/errors.ts';
import { waitFor } from '../kube/wait.ts';
import { ccmImageFor, type ProviderId, providerFacts } from '../providers/catalog.ts';
import { detectProvider, parseProviderID } from '../providers/provider-id.ts';
import { type ClusterAccess, isControlPlane, isNodeReady, listNodes, nodeName } from './cluster.ts';
import type { StepContext } from './context.ts';
import { CONTROL_PLANE_MANIFESTS, KCM_MANIFEST } from './edits.ts';
import { readClusterConfiguration } from './kubeadm-config.ts';
import { decideLeaderMigration } from './leader-migration.ts';
import type { PreflightResult, UpgradeOptions } from './schemas.ts';
import { type NodeFacts, type Snapshot, SnapshotSchema, TOPOLOGY_LABELS } from './snapshot.ts';

/** Agent Jobs started at once while inspecting: enough to be quick, few enough not to crowd a cluster. */
const INSPECT_CONCURRENCY = 10;

type Files = Record<string, FileReport[]>;

function listOf(names: readonly string[], max = 10): string {
  return names.length <= max
    ? names.join(', ')
    : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

function factsOf(node: V1Node): NodeFacts {
  const labels: Record<string, string> = {};
  for (const key of TOPOLOGY_LABELS) {
    const value = node.metadata?.labels?.[key];
    if (value !== undefined) labels[key] = value;
  }
  return {
    role: isControlPlane(node) ? 'control-plane' : 'worker',
    ...(node.spec?.providerID ? { providerID: node.spec.providerID } : {}),
    labels,
    addresses: (node.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
  };
}

async function inspectNodes(ctx: ExamineContext, runId: string, nodes: readonly V1Node[]): Promise<Files> {
  const limit = pLimit(INSPECT_CONCURRENCY);
  const files: Files = {};
  await Promise.all(
    nodes.map((node) =>
      limit(async () => {
        const name = nodeName(node);
        const paths = isControlPlane(node) ? [...CONTROL_PLANE_MANIFESTS] : [];
        const result = await ctx.agent(name, { op: 'inspect', runId, paths });
        files[name] = result.files;
        ctx.progress({ step: 'preflight', node: name, message: 'inspected' });
      }),
    ),
  );
  return files;
}

/**
 * The agent reports a file it cannot read as a manifest or flags file as kind `other`: the upgrade would
 * fail on it half-way, so it fails here, before any change, naming the file (never its content).
 */
function refuseUnreadable(files: Files, controlPlane: readonly string[]): void {
  const problems: string[] = [];
  for (const [node, reports] of Object.entries(files)) {
    for (const manifest of controlPlane.includes(node) ? CONTROL_PLANE_MANIFESTS : []) {
      const report = reports.find((f) => f.path === manifest);
      if (!report?.exists) problems.push(`${node}:${manifest} does not exist`);
      else if (report.kind !== 'static-pod')
        problems.push(`${node}:${manifest} is not a static pod manifest the agent can parse`);
    }
    for (const f of reports) {
      if (f.exists && f.kind === 'other' && !CONTROL_PLANE_MANIFESTS.includes(f.path as never)) {
        problems.push(`${node}:${f.path} is not a kubelet flags file the agent can parse`);
      }
    }
  }
  if (problems.length > 0)
    throw new AgentFailedError(`refusing to change what cannot be parsed: ${listOf(problems, 5)}`);
}

/** Every node file that still names the in-tree provider or a cloud config, as "node:path". */
function inTreeLeft(files: Files, inTreeName: string | undefined): string[] {
  return Object.entries(files).flatMap(([node, reports]) =>
    reports
      .filter((f) => {
        const provider = f.flags?.['cloud-provider'];
        return (
          (inTreeName !== undefined && provider === inTreeName) || f.flags?.['cloud-config'] !== undefined
        );
      })
      .map((f) => `${node}:${f.path}`),
  );
}

function externalAlready(files: Files): string[] {
  return Object.entries(files).flatMap(([node, reports]) =>
    reports.filter((f) => f.flags?.['cloud-provider'] === 'external').map((f) => `${node}:${f.path}`),
  );
}

function chooseProvider(nodes: readonly V1Node[], files: Files, wanted: ProviderId | undefined): ProviderId {
  const detected = detectProvider({
    providerIDs: nodes.flatMap((n) => (n.spec?.providerID ? [n.spec.providerID] : [])),
    cloudProviderFlags: Object.values(files).flatMap((reports) =>
      reports.flatMap((f) => (f.flags?.['cloud-provider'] ? [f.flags['cloud-provider']] : [])),
    ),
  });
  if (detected && wanted && detected.provider !== wanted) {
    throw new PreflightFailedError(
      `--provider ${wanted} does not match the cluster, which runs ${detected.provider} (${detected.evidence.slice(0, 3).join('; ')})`,
    );
  }
  const provider = detected?.provider ?? wanted;
  if (!provider) {
    throw new PreflightFailedError(
      'cannot tell the cluster’s provider from node providerIDs or flags: pass --provider',
    );
  }
  return provider;
}

/** A CCM that cannot find a node's instance deletes the Node: every node must name an instance of the provider. */
function checkNodeIdentity(nodes: readonly V1Node[], provider: ProviderId): void {
  const unknown = nodes.filter((n) => parseProviderID(n.spec?.providerID ?? '')?.provider !== provider);
  if (unknown.length > 0) {
    throw new PreflightFailedError(
      `the ${provider} cloud-controller-manager would not find the instance of ${unknown.length} node(s) and would delete them: ${listOf(
        unknown.map((n) => `${nodeName(n)} (providerID ${n.spec?.providerID || 'missing'})`),
      )}`,
    );
  }
}

function clusterNameOf(files: Files, controlPlane: readonly string[]): string {
  const names = new Set(
    controlPlane.map(
      (node) => files[node]?.find((f) => f.path === KCM_MANIFEST)?.flags?.['cluster-name'] ?? 'kubernetes',
    ),
  );
  if (names.size > 1) {
    throw new PreflightFailedError(
      `kube-controller-managers disagree on --cluster-name: ${[...names].join(', ')}`,
    );
  }
  return [...names][0] ?? 'kubernetes';
}

async function loadBalancers(ctx: ClusterAccess): Promise<Snapshot['loadBalancers']> {
  const services = await call('list services', () => ctx.clients.core.listServiceForAllNamespaces());
  return services.items
    .filter((s) => s.spec?.type === 'LoadBalancer')
    .map((s) => ({
      namespace: s.metadata?.namespace ?? '',
      name: s.metadata?.name ?? '',
      ingress: (s.status?.loadBalancer?.ingress ?? []).map((i) => i.hostname ?? i.ip ?? ''),
    }));
}

/** What preflight and plan read from a cluster: every check passed, nothing changed, nothing recorded. */
export interface ClusterExamination {
  readonly kubernetesVersion: string;
  readonly nodes: readonly V1Node[];
  readonly controlPlaneNodes: string[];
  readonly workerNodes: string[];
  readonly files: Files;
  readonly provider: ProviderId;
  readonly ccmImage: string;
  readonly clusterName: string;
  /** Node files still on the in-tree provider, and files already external, as "node:path". */
  readonly inTreeLeft: string[];
  readonly externalAlready: string[];
}

export type ExamineContext = Pick<StepContext, 'clients' | 'agent' | 'progress' | 'waitMs' | 'pollMs'>;

export async function examineCluster(
  ctx: ExamineContext,
  runId: string,
  options: UpgradeOptions,
): Promise<ClusterExamination> {
  const version = await call(`reach the API server at ${ctx.clients.server}`, () =>
    ctx.clients.version.getCode(),
  );
  const nodes = await waitFor(
    'every node to be Ready',
    async () => {
      const all = await listNodes(ctx);
      return all.every(isNodeReady) && all;
    },
    ctx,
  ).catch(async (err: unknown) => {
    const notReady = (await listNodes(ctx)).filter((n) => !isNodeReady(n)).map(nodeName);
    throw notReady.length > 0 ? new PreflightFailedError(`nodes not Ready: ${listOf(notReady)}`) : err;
  });
  const controlPlaneNodes = nodes.filter(isControlPlane).map(nodeName).sort();
  const workerNodes = nodes
    .filter((n) => !isControlPlane(n))
    .map(nodeName)
    .sort();
  if (controlPlaneNodes.length === 0) {
    throw new PreflightFailedError(
      'no node is labelled node-role.kubernetes.io/control-plane: not a kubeadm-style cluster',
    );
  }
  const files = await inspectNodes(ctx, runId, nodes);
  refuseUnreadable(files, controlPlaneNodes);
  const provider = chooseProvider(nodes, files, options.provider);
  const { inTreeName } = providerFacts(provider);
  const { image } = ccmImageFor(provider, version.gitVersion);
  checkNodeIdentity(nodes, provider);
  return {
    kubernetesVersion: version.gitVersion,
    nodes,
    controlPlaneNodes,
    workerNodes,
    files,
    provider,
    ccmImage: image,
    clusterName: clusterNameOf(files, controlPlaneNodes),
    inTreeLeft: inTreeLeft(files, inTreeName),
    externalAlready: externalAlready(files),
  };
}

export async function preflight(
  event: { clusterId: string; runId: string; options: UpgradeOptions },
  ctx: StepContext,
): Promise<PreflightResult> {
  const record = await ctx.store.begin({ clusterId: event.clusterId, runId: event.runId, kind: 'upgrade' });
  const exam = await examineCluster(ctx, event.runId, event.options);
  const leaderMigration = decideLeaderMigration(
    exam.kubernetesVersion,
    exam.controlPlaneNodes.length,
    event.options.leaderMigration,
  );
  const left = exam.inTreeLeft;
  const external = exam.externalAlready;
  if (left.length > 0 && external.length > 0 && record.snapshot === undefined) {
    // Half-migrated: carry on only from a failed upgrade of ours, whose snapshot saw the cluster before it.
    const previous = (await ctx.store.list(event.clusterId))
      .filter((r) => r.kind === 'upgrade' && r.runId !== event.runId)
      .findLast((r) => r.snapshot !== undefined);
    if (previous?.snapshot === undefined) {
      throw new PreflightFailedError(
        `the cluster is half-migrated by a run ccm-migrate does not know: still in-tree ${listOf(left, 5)}; already external ${listOf(external, 5)}`,
      );
    }
    await ctx.store.setSnapshotOnce(event.clusterId, event.runId, previous.snapshot);
    ctx.progress({ step: 'preflight', message: `continuing the half-done upgrade of run ${previous.runId}` });
  }
  const snapshot: Snapshot = {
    takenAt: new Date().toISOString(),
    provider: exam.provider,
    kubernetesVersion: exam.kubernetesVersion,
    ccmImage: exam.ccmImage,
    clusterName: exam.clusterName,
    ccmReplicas: event.options.ccmReplicas ?? Math.min(exam.controlPlaneNodes.length, 3),
    nodes: Object.fromEntries(exam.nodes.map((n) => [nodeName(n), factsOf(n)])),
    files: Object.fromEntries(
      Object.entries(exam.files).map(([node, reports]) => [
        node,
        // Only what the way back needs (no sizes or diffs), and no undefined fields: the store keeps JSON.
        reports.map(({ path, exists, sha256, kind, flags }) =>
          JSON.parse(JSON.stringify({ path, exists, sha256, kind, flags })),
        ),
      ]),
    ),
    loadBalancers: await loadBalancers(ctx),
  };
  const clusterConfiguration = await readClusterConfiguration(ctx);
  if (clusterConfiguration !== undefined) snapshot.kubeadmClusterConfiguration = clusterConfiguration;
  // A resumed run keeps the snapshot of its first preflight: that one saw the cluster before any change.
  SnapshotSchema.parse(await ctx.store.setSnapshotOnce(event.clusterId, event.runId, snapshot));
  ctx.progress({
    step: 'preflight',
    message:
      left.length === 0
        ? 'already external: nothing to change'
        : `${exam.provider} ${exam.kubernetesVersion}, ${exam.nodes.length} nodes; ${leaderMigration.reason}`,
  });
  return {
    alreadyExternal: left.length === 0,
    provider: exam.provider,
    kubernetesVersion: exam.kubernetesVersion,
    controlPlaneNodes: exam.controlPlaneNodes,
    workerNodes: exam.workerNodes,
    kubeletOrder: [...exam.controlPlaneNodes, ...exam.workerNodes],
    leaderMigration,
  };
}
