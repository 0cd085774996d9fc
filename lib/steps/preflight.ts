/**
 * Step 1, Preflight: everything that can be checked before the first change, then the snapshot that is the
 * way back. It changes nothing in the cluster: a failure here leaves the cluster exactly as it was.
 */
import type { V1Node } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import type { AgentRequest, AgentResult, FileReport } from '../agent/protocol.ts';
import {
  externalNodeName,
  KUBELET_CONFIG_FILE,
  KUBELET_FILES,
  KUBELET_FLAG_SOURCES,
} from '../controlplane/kubelet-sources.ts';
import { translatedCloudConfigPath } from '../controlplane/openstack-cloud-config.ts';
import {
  AgentFailedError,
  DeadlineReachedError,
  KubeApiRejectedError,
  PreflightFailedError,
} from '../errors.ts';
import { agentAccountPresent, giveGoSignals, takeGoSignalsBack } from '../kube/agent-account.ts';
import { cancelPrestartedAgentJobs, removeAgentAccountUnlessAwaited } from '../kube/agent-job.ts';
import { call } from '../kube/errors.ts';
import { readSecretMetadata } from '../kube/metadata.ts';
import { foreignObjects, MANAGED_BY } from '../kube/ownership.ts';
import { waitFor } from '../kube/wait.ts';
import { UNINITIALIZED_TAINT } from '../kube/well-known.ts';
import { ccmImageFor, neverInTree, PROVIDERS, type ProviderId, providerFacts } from '../providers/catalog.ts';
import { PLUGIN_CONFIG_PATH } from '../providers/image-credentials.ts';
import { checkImageOverrides, type ImageOverrides } from '../providers/image-overrides.ts';
import {
  type AddressPrediction,
  type NodeAddress,
  predictNodeAddresses,
} from '../providers/node-addresses.ts';
import { kcmNodeNetwork, type NodeNetwork } from '../providers/node-network.ts';
import { detectProvider, parseProviderID } from '../providers/provider-id.ts';
import { addressChangesOf, addressNote, expectedAddresses } from './address-plan.ts';
import { inTreeCloudConfigPath, renderCcm } from './ccm.ts';
import {
  type ClusterAccess,
  hasUninitializedTaint,
  isControlPlane,
  isNodeReady,
  listNodes,
  nodeName,
} from './cluster.ts';
import type { StepContext } from './context.ts';
import { deployedCcm } from './deployed-ccm.ts';
import { CONTROL_PLANE_MANIFESTS, KCM_MANIFEST } from './edits.ts';
import { type PinnedEndpoint, pinnedEndpoint, pinnedNote, restartOrder } from './endpoint.ts';
import {
  credentialsNote,
  type ImageCredentialsPlan,
  planImageCredentials,
  pluginRequired,
} from './image-credentials.ts';
import { readClusterConfiguration, readKubeletConfiguration } from './kubeadm-config.ts';
import { dropInsInTheWay } from './kubelet-drop-ins.ts';
import { decideLeaderMigration } from './leader-migration.ts';
import { listOf } from './list-of.ts';
import { besidePrestart, prestartAgents } from './prestart.ts';
import { uneditedKubeletFlags } from './running-kubelet.ts';
import type { LeaderMigrationDecision, PreflightResult, UpgradeOptions } from './schemas.ts';
import { type NodeFacts, type Snapshot, SnapshotSchema, TOPOLOGY_LABELS } from './snapshot.ts';
import { missingCsiDrivers, observeStorage } from './storage.ts';
import type { StorageInventory } from './storage-inventory.ts';

/**
 * Agent Jobs started at once while inspecting. An inspection only reads a node's files, so this bounds the
 * API load (≈ 4 requests a Job, spread over its start: about 80 requests a second at 100) rather than any
 * disruption. Each round costs a pod start and, on a node's first agent pod, the image pull (10 s at the
 * realistic figures): 100 takes a 500-node cluster in five rounds, where 50 took ten (the bench at 3 + 500,
 * realistic ÷ 10: preflight 14.7 → 10.9 s).
 */
const INSPECT_CONCURRENCY = 100;

type Files = Record<string, FileReport[]>;

/** What a Secret (or namespace) may be named. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const KUBELET_SOURCES_NAMED = [...new Set(KUBELET_FLAG_SOURCES.map((s) => s.path))].join(', ');

function factsOf(node: V1Node, predicted: NodeAddress[] | undefined): NodeFacts {
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
    ...(predicted ? { predictedAddresses: predicted } : {}),
  };
}

/** Per node, per path an earlier run backed up: the original's sha256 (null: it did not exist). */
export type BackupDigests = Record<string, Record<string, string | null>>;

async function inspectNodes(
  ctx: ExamineContext,
  runId: string,
  nodes: readonly V1Node[],
  backupsOf: string | undefined,
): Promise<{
  files: Files;
  backups: BackupDigests;
  renamed: Record<string, string>;
  unedited: string[];
  credentials: Record<string, AgentResult['imageCredentials']>;
  nodeIPs: Record<string, string>;
}> {
  const limit = pLimit(INSPECT_CONCURRENCY);
  const files: Files = {};
  const credentials: Record<string, AgentResult['imageCredentials']> = {};
  const nodeIPs: Record<string, string> = {};
  const backups: BackupDigests = {};
  const renamed: Record<string, string> = {};
  const unedited: string[] = [];
  const requests = new Map<string, AgentRequest>(
    nodes.map((node) => [
      nodeName(node),
      {
        op: 'inspect',
        runId,
        // The credential plugin's config too: the snapshot records it absent, the file the way back removes.
        paths: [...(isControlPlane(node) ? CONTROL_PLANE_MANIFESTS : []), PLUGIN_CONFIG_PATH],
        ...(backupsOf ? { backupsOf } : {}),
      },
    ]),
  );
  const requestOf = (name: string): AgentRequest => requests.get(name) as AgentRequest;
  const inspect = async (name: string, goGiven = false): Promise<void> => {
    const result = await ctx.agent(name, requestOf(name), { goGiven });
    files[name] = result.files;
    if (result.backups) backups[name] = result.backups;
    const external = result.host && externalNodeName(result.host.hostname, result.host.hostnameOverride);
    if (external && external !== name) renamed[name] = external;
    if (result.host?.nodeIP !== undefined) nodeIPs[name] = result.host.nodeIP;
    unedited.push(
      ...uneditedKubeletFlags(name, result.kubeletFlags),
      ...dropInsInTheWay(name, result.kubeletDropIns),
    );
    credentials[name] = result.imageCredentials;
    ctx.progress({ step: 'preflight', node: name, message: 'inspected' });
  };
  // One Job first: an agent image or bundle its launcher refuses is reported by one Job, not by fifty. The
  // others' pods start beside it (lib/steps/prestart.ts), each waiting for its go: they are told to go
  // together once the first answered, or deleted unrun if it did not.
  const [first, ...rest] = nodes.map(nodeName);
  const prestarting = prestartAgents(rest, ctx, 'preflight', requestOf);
  if (first) {
    await besidePrestart(
      inspect(first),
      prestarting.then(() => undefined),
    ).catch(async (err: unknown) => {
      await cancelPrestartedAgentJobs(
        ctx.clients,
        (await prestarting).map((p) => p.job),
      );
      throw err;
    });
  }
  const prestarted = await prestarting;
  const jobs = prestarted.map((p) => p.job);
  await giveGoSignals(ctx.clients, Object.fromEntries(prestarted.map((p) => [p.job, p.go])));
  const given = new Set(prestarted.map((p) => p.node));
  // Each one settled before the go is taken back: none still waiting to read it is left without.
  const settled = await Promise.allSettled(rest.map((name) => limit(() => inspect(name, given.has(name)))));
  // Their keys would only weigh on the flips' go changes.
  await takeGoSignalsBack(ctx.clients, jobs);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return { files, backups, renamed, unedited, credentials, nodeIPs };
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
      if (f.exists && f.kind === 'other' && KUBELET_FILES.includes(f.path)) {
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
    // A cluster external from birth names no cloud anywhere: only the operator can.
    const externalOnly = PROVIDERS.filter(neverInTree).map((p) => `--provider ${p}`);
    throw new PreflightFailedError(
      `cannot tell the cluster’s provider: no node providerID and no in-tree --cloud-provider names one ccm-migrate knows. ` +
        `Name it with --provider (${externalOnly.join(', ')} for a cluster external from birth; ccm-migrate knows ${PROVIDERS.join(', ')})`,
    );
  }
  return provider;
}

/**
 * The nodes that wait for exactly the CCM the upgrade installs: on a cluster external from birth of a
 * provider that never was in-tree (IBM), where no cloud controller ever ran, kubelets with
 * --cloud-provider=external registered every node tainted uninitialized and without a providerID, and that
 * CCM finds each by name. Anywhere else (an in-tree provider, a file still naming a cloud config, or any
 * node with a providerID: some cloud controller has run) none does.
 */
function nodesAwaitingCcm(
  nodes: readonly V1Node[],
  provider: ProviderId,
  inTreeLeft: readonly string[],
): V1Node[] {
  if (!neverInTree(provider) || inTreeLeft.length > 0 || nodes.some((n) => n.spec?.providerID)) return [];
  return nodes.filter(hasUninitializedTaint);
}

/**
 * A CCM that cannot find a node's instance deletes the Node (IBM's never does, but leaves it
 * uninitialised): every node must name an instance of the provider, or wait for the CCM to be installed.
 */
function checkNodeIdentity(
  nodes: readonly V1Node[],
  provider: ProviderId,
  awaiting: readonly V1Node[],
): void {
  const unknown = nodes.filter(
    (n) => !awaiting.includes(n) && parseProviderID(n.spec?.providerID ?? '')?.provider !== provider,
  );
  if (unknown.length === 0) return;
  const described = unknown.map((n) => {
    const id = n.spec?.providerID;
    if (id || !neverInTree(provider)) return `${nodeName(n)} (providerID ${id || 'missing'})`;
    return nodes.some((m) => m.spec?.providerID)
      ? `${nodeName(n)} (providerID missing, while other nodes have one)`
      : `${nodeName(n)} (providerID missing, and no ${UNINITIALIZED_TAINT} taint: its kubelet does not wait for a cloud-controller-manager)`;
  });
  throw new PreflightFailedError(
    neverInTree(provider)
      ? `the ${provider} cloud-controller-manager would not initialise ${unknown.length} node(s): ${listOf(described)}`
      : `the ${provider} cloud-controller-manager would not find the instance of ${unknown.length} node(s) and would delete them: ${listOf(described)}`,
  );
}

/**
 * Where the CCM of a provider never in-tree reads its cloud config (no kube-controller-manager
 * --cloud-config names one): it must be on every control-plane node, where the CCM may run and mounts it.
 * Checked through the node agent, before anything changes; only the file's presence is read.
 */
async function requireCloudConfigFile(
  ctx: ExamineContext,
  runId: string,
  provider: ProviderId,
  files: Files,
  controlPlane: readonly string[],
): Promise<void> {
  const { cloudConfigHostPath: path, displayName } = providerFacts(provider);
  if (path === undefined || inTreeCloudConfigPath({ files }) !== undefined) return;
  const limit = pLimit(INSPECT_CONCURRENCY);
  const missing = (
    await Promise.all(
      controlPlane.map((node) =>
        limit(async () => {
          const result = await ctx.agent(node, { op: 'inspect', runId, paths: [path] });
          return result.files.some((f) => f.path === path && f.exists) ? [] : [node];
        }),
      ),
    )
  ).flat();
  if (missing.length > 0) {
    throw new PreflightFailedError(
      `the ${displayName} cloud-controller-manager reads its cloud config from ${path} on the control-plane node it runs on, and ${listOf(missing)} ${missing.length === 1 ? 'has' : 'have'} none: put the cluster's cloud config there first`,
    );
  }
}

/** The translation preflight records, and the copies the upgrade would write (plan shows them). */
interface CloudConfigTranslationPlan {
  readonly translation: NonNullable<Snapshot['cloudConfigTranslation']>;
  readonly copies: readonly { readonly node: string; readonly path: string }[];
}

/**
 * `[LoadBalancer] use-octavia = false` sent the in-tree provider's load balancers to Neutron LBaaS, which
 * OCCM does not speak (it dropped Neutron LBaaS, PROVIDER-FACTS.md §5): carried over, the key would be
 * ignored and the CCM would manage every LoadBalancer Service through Octavia, where none of them is.
 */
function refuseNeutronLbaas(source: string, nodes: readonly string[]): void {
  if (nodes.length === 0) return;
  throw new PreflightFailedError(
    `${listOf(nodes.map((n) => `${n}:${source}`))} sets [LoadBalancer] use-octavia = false (Neutron LBaaS), and the external OpenStack cloud-controller-manager speaks only Octavia: ` +
      'move the load balancers to Octavia (use-octavia = true, or the key removed, on every node) and run again',
  );
}

/**
 * Whether the in-tree cloud config needs a copy the CCM can read (OpenStack's `[Global] secret-name`,
 * which OCCM ignores), asked of every control-plane node's agent in a dry run: the agents answer with the
 * Secret's name only. The nodes must agree, and the Secret must be in the CCM's namespace, the only one
 * whose Secrets its pods can mount, and exist there. A config the agent cannot parse fails here, naming
 * the file.
 */
async function planCloudConfigTranslation(
  ctx: ExamineContext,
  runId: string,
  provider: ProviderId,
  files: Files,
  controlPlane: readonly string[],
): Promise<CloudConfigTranslationPlan | undefined> {
  const source = inTreeCloudConfigPath({ files });
  if (provider !== 'openstack' || source === undefined) return undefined;
  const target = translatedCloudConfigPath(source);
  const limit = pLimit(INSPECT_CONCURRENCY);
  const named = await Promise.all(
    controlPlane.map((node) =>
      limit(async () => {
        const result = await ctx.agent(node, {
          op: 'translate-cloud-config',
          runId,
          provider,
          source,
          target,
          dryRun: true,
        });
        const secret = result.credentialsSecret;
        const copies = result.files.filter((f) => f.changed).map((f) => ({ node, path: f.path }));
        const ref = secret && `${secret.namespace}/${secret.name}`;
        return { node, secret, ref, copies, useOctavia: result.useOctavia };
      }),
    ),
  );
  refuseNeutronLbaas(
    source,
    named.filter((n) => n.useOctavia === false).map((n) => n.node),
  );
  if (new Set(named.map((n) => n.ref)).size > 1) {
    const described = named.map((n) => `${n.node}: ${n.ref ?? 'none'}`);
    throw new PreflightFailedError(
      `the control-plane nodes' ${source} name different credentials Secrets ([Global] secret-name): ${listOf(described)}`,
    );
  }
  const secret = named[0]?.secret;
  if (secret === undefined) return undefined;
  const { name, namespace } = secret;
  const ref = `${namespace}/${name}`;
  if (!DNS_SUBDOMAIN.test(name) || !DNS_SUBDOMAIN.test(namespace)) {
    throw new PreflightFailedError(
      `${source} names credentials Secret ${JSON.stringify(ref)} ([Global] secret-name/secret-namespace), which is no Kubernetes object name`,
    );
  }
  const { namespace: ccmNamespace, displayName } = providerFacts(provider);
  if (namespace !== ccmNamespace) {
    throw new PreflightFailedError(
      `${source} takes the ${displayName} credentials from Secret ${ref} ([Global] secret-namespace), and the cloud-controller-manager runs in ${ccmNamespace}, whose Secrets only it can mount: copy the Secret to ${ccmNamespace}/${name} and point secret-namespace at ${ccmNamespace} first`,
    );
  }
  // The CCM would not start without it, and the run would roll back after changing the cluster: refuse now.
  // Asked for its metadata only: the orchestrator never receives the credentials.
  const metadata = await readSecretMetadata(ctx.clients, { namespace, name }).catch((err: unknown) => {
    // The shipped RBAC names the one Secret it may read, and a cluster's may be named otherwise.
    if (!(err instanceof KubeApiRejectedError && err.status === 403)) throw err;
    throw new PreflightFailedError(
      `${displayName} credentials Secret ${ref} named by [Global] secret-name in ${source} may not be read by this identity: put ${name} in the Secret rule's resourceNames in assets/rbac/ccm-migrate.yaml and apply it`,
    );
  });
  if (metadata === undefined) {
    throw new PreflightFailedError(
      `${displayName} credentials Secret ${ref} named by [Global] secret-name in ${source} on ${listOf(named.map((n) => n.node))} does not exist: create it (or drop secret-name) and run again`,
    );
  }
  return {
    translation: { source, target, credentialsSecret: { name, namespace } },
    copies: named.flatMap((n) => n.copies),
  };
}

/**
 * Whether the run hands the cloud controllers over under the leader-migration lease. A provider never in-tree
 * has no kube-controller-manager running them: nothing to hand over (an explicit ask is refused).
 */
export function leaderMigrationFor(
  exam: Pick<ClusterExamination, 'provider' | 'kubernetesVersion' | 'controlPlaneNodes' | 'nodeNetwork'>,
  wanted: boolean | undefined,
): LeaderMigrationDecision {
  const { provider, kubernetesVersion, controlPlaneNodes } = exam;
  if (!neverInTree(provider)) {
    const nodeIpamMoves = exam.nodeNetwork.nodeIpam === 'cloud';
    return decideLeaderMigration(kubernetesVersion, controlPlaneNodes.length, wanted, nodeIpamMoves);
  }
  const { displayName } = providerFacts(provider);
  if (wanted) {
    throw new PreflightFailedError(
      `leader migration hands the cloud controllers over from an in-tree kube-controller-manager, and ${displayName} never had an in-tree provider`,
    );
  }
  return {
    enabled: false,
    reason: `${displayName} never had an in-tree provider: no kube-controller-manager runs cloud controllers to hand over`,
  };
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

/**
 * What the kube-controller-managers do with node CIDRs and cloud routes, from their flags: they must agree,
 * or the CCM could not carry one behaviour over. On a half-migrated control plane (a resumed run) only those
 * still in-tree say what the cluster did before; the moved ones run what the move made of it.
 */
function nodeNetworkOf(files: Files, controlPlane: readonly string[], provider: ProviderId): NodeNetwork {
  const facts = providerFacts(provider);
  const kcmFlags = (node: string) => files[node]?.find((f) => f.path === KCM_MANIFEST)?.flags ?? {};
  const inTree = controlPlane.filter(
    (node) => facts.inTreeName !== undefined && kcmFlags(node)['cloud-provider'] === facts.inTreeName,
  );
  const seen = new Map(
    (inTree.length > 0 ? inTree : controlPlane).map((node) => {
      const network = kcmNodeNetwork(facts, kcmFlags(node));
      return [JSON.stringify(network), network] as const;
    }),
  );
  if (seen.size > 1) {
    throw new PreflightFailedError(
      `kube-controller-managers disagree on node CIDRs and cloud routes (--allocate-node-cidrs, --configure-cloud-routes, --cluster-cidr, --cidr-allocator-type, --controllers): ${[...seen.keys()].join('; ')}`,
    );
  }
  return [...seen.values()][0] ?? { cloudRoutes: false, nodeIpam: 'none' };
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
  readonly nodeNetwork: NodeNetwork;
  /** Node files still on the in-tree provider, and files already external, as "node:path". */
  readonly inTreeLeft: string[];
  readonly externalAlready: string[];
  /**
   * Nodes that wait, uninitialised and without a providerID, for the CCM the upgrade installs (a cluster
   * external from birth of a provider never in-tree); empty anywhere else.
   */
  readonly awaitingCcm: string[];
  /** The copy of the in-tree cloud config the CCM reads instead, when it needs one. */
  readonly cloudConfigTranslation?: Snapshot['cloudConfigTranslation'];
  /** Where the upgrade would write that copy (or change it): the agents' dry-run answer. */
  readonly cloudConfigCopies?: CloudConfigTranslationPlan['copies'];
  /** What the run named by `backupsOf` backed up on each node (a downgrade's way back). */
  readonly backups: BackupDigests;
  /**
   * Each node's addresses once the CCM sets them (from the Node's addresses now and the --node-ip its
   * kubelet restarts with, as the CCM of the image's minor reads them), or why it never would.
   */
  readonly predictedAddresses: Record<string, AddressPrediction>;
  /**
   * Nodes whose kubelet would register as another Node once off the in-tree provider (by node: that
   * name, its host's or an override the provider ignored): the flip pins --hostname-override to keep it.
   */
  readonly renamedOffInTree: Record<string, string>;
  /** The control-plane node the API endpoint is, when it is one (last in controlPlaneNodes). */
  readonly endpoint?: PinnedEndpoint;
  /** What the flip does to each kubelet's image credentials. */
  readonly imageCredentials: ImageCredentialsPlan;
  /** The in-tree volumes and StorageClasses, and the CSI drivers that serve them. */
  readonly storage: StorageInventory;
}

/** Preflight's wait for every node to be Ready ran out: the nodes still not Ready. */
export class NodesNotReadyError extends PreflightFailedError {
  constructor(nodes: readonly string[]) {
    super(`nodes not Ready: ${listOf(nodes)}`);
  }
}

export type ExamineContext = Pick<
  StepContext,
  'clients' | 'agent' | 'prestartAgent' | 'progress' | 'waitMs' | 'pollMs' | 'deadline'
>;

export async function examineCluster(
  ctx: ExamineContext,
  runId: string,
  options: UpgradeOptions,
  opts: { backupsOf?: string } = {},
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
    // Cut by the invocation's deadline, the wait proved nothing about the nodes: the retry looks again.
    if (err instanceof DeadlineReachedError) throw err;
    const notReady = (await listNodes(ctx)).filter((n) => !isNodeReady(n)).map(nodeName);
    throw notReady.length > 0 ? new NodesNotReadyError(notReady) : err;
  });
  const endpoint = await pinnedEndpoint(ctx, nodes);
  // The endpoint's own node restarts last: the others have taken the same edit by then.
  const controlPlaneNodes = restartOrder(nodes.filter(isControlPlane).map(nodeName).sort(), endpoint);
  const workerNodes = nodes
    .filter((n) => !isControlPlane(n))
    .map(nodeName)
    .sort();
  if (controlPlaneNodes.length === 0) {
    throw new PreflightFailedError(
      'no node is labelled node-role.kubernetes.io/control-plane: not a kubeadm-style cluster',
    );
  }
  const { files, backups, renamed, unedited, credentials, nodeIPs } = await inspectNodes(
    ctx,
    runId,
    nodes,
    opts.backupsOf,
  );
  refuseUnreadable(files, controlPlaneNodes);
  if (unedited.length > 0) {
    throw new PreflightFailedError(
      `kubelet flags or feature gates that come from somewhere ccm-migrate does not edit (${KUBELET_SOURCES_NAMED}, ${KUBELET_CONFIG_FILE}): ${listOf(unedited, 5)}. ` +
        'Move them into one of those files (or restart the kubelet, if its files changed since it started) and run again',
    );
  }
  const provider = chooseProvider(nodes, files, options.provider);
  checkImageOverrides(provider, options.images);
  const { inTreeName } = providerFacts(provider);
  const { image, minor: ccmMinor } = ccmImageFor(provider, version.gitVersion);
  const left = inTreeLeft(files, inTreeName);
  const imageCredentials = planImageCredentials(provider, version.gitVersion, nodes, credentials);
  const awaiting = nodesAwaitingCcm(nodes, provider, left);
  checkNodeIdentity(nodes, provider, awaiting);
  await requireCloudConfigFile(ctx, runId, provider, files, controlPlaneNodes);
  const translated = await planCloudConfigTranslation(ctx, runId, provider, files, controlPlaneNodes);
  const storage = await observeStorage(ctx, nodes);
  return {
    storage,
    ...(translated
      ? { cloudConfigTranslation: translated.translation, cloudConfigCopies: translated.copies }
      : {}),
    kubernetesVersion: version.gitVersion,
    nodes,
    controlPlaneNodes,
    workerNodes,
    files,
    provider,
    ccmImage: image,
    clusterName: clusterNameOf(files, controlPlaneNodes),
    nodeNetwork: nodeNetworkOf(files, controlPlaneNodes, provider),
    inTreeLeft: left,
    externalAlready: externalAlready(files),
    awaitingCcm: awaiting.map(nodeName),
    renamedOffInTree: renamed,
    imageCredentials,
    predictedAddresses: Object.fromEntries(
      nodes.map((n) => {
        const current = (n.status?.addresses ?? []).map(({ type, address }) => ({ type, address }));
        const nodeIP = nodeIPs[nodeName(n)];
        return [nodeName(n), predictNodeAddresses({ minor: ccmMinor, current, nodeIP })];
      }),
    ),
    backups,
    ...(endpoint ? { endpoint } : {}),
  };
}

/** The nodes whose Node name the flip pins, in words (progress output, plan); undefined when none. */
export function pinNote(exam: Pick<ClusterExamination, 'renamedOffInTree'>): string | undefined {
  const pins = Object.entries(exam.renamedOffInTree).map(([node, other]) => `${node} (else ${other})`);
  if (pins.length === 0) return undefined;
  return `--hostname-override keeps the Node name of ${pins.length} kubelet(s) whose host names another: ${listOf(pins, 5)}`;
}

/** The CCM in words, for messages: "the AWS cloud-controller-manager". */
export function ccmName(provider: ProviderId): string {
  return `${providerFacts(provider).displayName} cloud-controller-manager`;
}

/** What the run does on a cluster external from birth, in words (progress output, plan); undefined elsewhere. */
export function installNote(exam: Pick<ClusterExamination, 'provider' | 'awaitingCcm'>): string | undefined {
  if (exam.awaitingCcm.length === 0) return undefined;
  const { displayName } = providerFacts(exam.provider);
  return (
    `${exam.awaitingCcm.length} node(s) wait uninitialised for the ${displayName} cloud-controller-manager: the upgrade installs it ` +
    `(${displayName} never had an in-tree provider: nothing in-tree to move, no downgrade target)`
  );
}

/**
 * What the snapshot records of how the run renders its CCM (the steps' renderCcm reads these): preflight
 * records them, and plan renders from them, so that it shows the objects the upgrade applies.
 */
export function ccmSnapshotFields(
  exam: ClusterExamination,
  options: UpgradeOptions,
): Pick<
  Snapshot,
  | 'provider'
  | 'kubernetesVersion'
  | 'clusterName'
  | 'images'
  | 'ccmReplicas'
  | 'ccmWorkload'
  | 'files'
  | 'cloudConfigTranslation'
  | 'nodeNetwork'
> {
  return {
    provider: exam.provider,
    kubernetesVersion: exam.kubernetesVersion,
    ...(options.images ? { images: options.images } : {}),
    clusterName: exam.clusterName,
    nodeNetwork: exam.nodeNetwork,
    ccmReplicas: options.ccmReplicas ?? Math.min(exam.controlPlaneNodes.length, 3),
    ccmWorkload: options.ccmWorkload ?? 'deployment',
    files: Object.fromEntries(
      Object.entries(exam.files).map(([node, reports]) => [
        node,
        // Only what the way back needs (no sizes or diffs), and no undefined fields: the store keeps JSON.
        reports.map(({ path, exists, sha256, kind, flags }) =>
          JSON.parse(JSON.stringify({ path, exists, sha256, kind, flags })),
        ),
      ]),
    ),
    ...(exam.cloudConfigTranslation ? { cloudConfigTranslation: exam.cloudConfigTranslation } : {}),
  };
}

/**
 * The way back as the examination saw the cluster: its node files and cloud fields, LoadBalancer ingress
 * and kubeadm's records (what verify compares with, and what a restore puts back).
 */
export async function takeSnapshot(
  ctx: ExamineContext,
  exam: ClusterExamination,
  options: UpgradeOptions,
): Promise<Snapshot> {
  const expected = expectedAddresses(exam.predictedAddresses, ccmName(exam.provider));
  const snapshot: Snapshot = {
    takenAt: new Date().toISOString(),
    ...ccmSnapshotFields(exam, options),
    ccmImage: exam.ccmImage,
    ...(pluginRequired(exam.imageCredentials) ? { imageCredentialsRequired: true } : {}),
    nodes: Object.fromEntries(exam.nodes.map((n) => [nodeName(n), factsOf(n, expected[nodeName(n)])])),
    loadBalancers: await loadBalancers(ctx),
    storage: exam.storage,
    ...(options.allowMissingCsi && missingCsiDrivers(exam.storage).length > 0
      ? { missingCsiAllowed: true }
      : {}),
  };
  const clusterConfiguration = await readClusterConfiguration(ctx);
  if (clusterConfiguration !== undefined) snapshot.kubeadmClusterConfiguration = clusterConfiguration;
  const kubeletConfiguration = await readKubeletConfiguration(ctx);
  if (kubeletConfiguration !== undefined) snapshot.kubeletConfiguration = kubeletConfiguration;
  return snapshot;
}

function sameImages(a: ImageOverrides | undefined, b: ImageOverrides | undefined): boolean {
  const entries = (m: ImageOverrides | undefined) => JSON.stringify(Object.entries(m ?? {}).sort());
  return entries(a) === entries(b);
}

function describeOverrides(images: ImageOverrides | undefined): string {
  const entries = Object.entries(images ?? {});
  return entries.length === 0 ? 'the catalog’s' : entries.map(([c, i]) => `${c}=${i}`).join(', ');
}

/**
 * The CCM objects the upgrade will apply must not be someone else's (a CCM installed by hand, another
 * tool's RBAC of the same name): applying over them would take them over and the way back would delete
 * them. Refused before any change, unless the operator adopts them.
 */
async function refuseForeignObjects(
  ctx: StepContext,
  snapshot: Snapshot,
  options: UpgradeOptions,
): Promise<void> {
  const foreign = await foreignObjects(ctx.clients, renderCcm(snapshot, 0));
  if (foreign.length === 0) return;
  if (options.adopt) {
    ctx.progress({
      step: 'preflight',
      message: `adopting ${listOf(foreign, 5)}: ccm-migrate takes them over`,
    });
    return;
  }
  throw new PreflightFailedError(
    `${listOf(foreign, 5)} already exist and were not created by ccm-migrate (no ${MANAGED_BY.key}=${MANAGED_BY.value}): remove them, or run again with --adopt to let ccm-migrate take them over (and delete them on the way back)`,
  );
}

/**
 * In-tree volumes are attached and mounted by their CSI driver (providers/csi-migration.ts), which the
 * external CCM does not replace: a driver not installed, or not registered on a node that mounts such a
 * volume or may get one, is refused before any change, unless the operator goes ahead knowingly (the
 * snapshot records it).
 */
function refuseMissingCsi(ctx: StepContext, storage: StorageInventory, options: UpgradeOptions): void {
  const missing = missingCsiDrivers(storage);
  if (missing.length === 0) return;
  if (options.allowMissingCsi) {
    ctx.progress({
      step: 'preflight',
      message: `going on without CSI driver(s), as --allow-missing-csi says: ${missing.join('; ')}`,
    });
    return;
  }
  throw new PreflightFailedError(
    `the CSI driver(s) of the cluster's in-tree volumes are missing: ${missing.join('; ')}. ` +
      'With CSI migration on (every version ccm-migrate moves) these volumes are attached and mounted only by that driver, and the external cloud-controller-manager carries no volume code: ' +
      'install the driver (its CSIDriver object, and its node plugin on every node), or run again with --allow-missing-csi to go on knowingly',
  );
}

type PreflightEvent = { clusterId: string; runId: string; options: UpgradeOptions };

export async function preflight(event: PreflightEvent, ctx: StepContext): Promise<PreflightResult> {
  const record = await ctx.store.begin({ clusterId: event.clusterId, runId: event.runId, kind: 'upgrade' });
  // A fresh run that ends here changes nothing: an agents' account its pre-started inspections created goes
  // again. A resumed run's later steps pre-start with it.
  const createsAccount = record.snapshot === undefined && !(await agentAccountPresent(ctx.clients));
  const plan = await planRun(event, ctx, record).catch(async (err: unknown) => {
    if (createsAccount) await leaveNoAgentAccount(ctx);
    throw err;
  });
  if (createsAccount && plan.alreadyExternal) await leaveNoAgentAccount(ctx);
  return plan;
}

/** Preflight's examination and plan, for a run whose record was `record` when this attempt began. */
async function planRun(
  event: PreflightEvent,
  ctx: StepContext,
  record: { readonly snapshot?: unknown },
): Promise<PreflightResult> {
  const exam = await examineCluster(ctx, event.runId, event.options).catch((err: unknown) =>
    resumedDespite(err, record.snapshot, ctx),
  );
  if ('plan' in exam) return exam.plan;
  const leaderMigration = leaderMigrationFor(exam, event.options.leaderMigration);
  const left = exam.inTreeLeft;
  // Nothing in-tree is left, but nodes wait for a CCM not installed yet: the run installs it.
  const alreadyExternal = left.length === 0 && exam.awaitingCcm.length === 0;
  const external = exam.externalAlready;
  // Only before this run's first change: a resumed run must be able to finish, or roll back.
  if (!alreadyExternal && record.snapshot === undefined) refuseMissingCsi(ctx, exam.storage, event.options);
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
  const plan: PreflightResult = {
    alreadyExternal,
    provider: exam.provider,
    kubernetesVersion: exam.kubernetesVersion,
    controlPlaneNodes: exam.controlPlaneNodes,
    workerNodes: exam.workerNodes,
    kubeletOrder: [...exam.controlPlaneNodes, ...exam.workerNodes],
    leaderMigration,
  };
  const taken = await takeSnapshot(ctx, exam, event.options);
  // Run again on a migrated cluster, the CCM is rendered as deployed: kube-controller-manager no longer
  // names the cloud config (the soak's second request met InvalidInput "none was given" here). A
  // translated OpenStack config is not carried: its copy belongs to the run that wrote it.
  const deployed = alreadyExternal ? await deployedCcm(ctx.clients, taken) : {};
  const snapshot: Snapshot = {
    ...taken,
    ...(deployed.deployedCloudConfig ? { deployedCloudConfig: deployed.deployedCloudConfig } : {}),
    plan,
  };
  const expected = expectedAddresses(exam.predictedAddresses, ccmName(exam.provider));
  // A resumed run keeps the snapshot of its first preflight: that one saw the cluster before any change.
  const recorded = SnapshotSchema.parse(
    await ctx.store.setSnapshotOnce(event.clusterId, event.runId, snapshot),
  );
  if ((recorded.ccmWorkload ?? 'deployment') !== snapshot.ccmWorkload) {
    ctx.progress({
      step: 'preflight',
      message: `the CCM keeps the workload recorded before: a ${recorded.ccmWorkload ?? 'deployment'} (asked now: a ${snapshot.ccmWorkload})`,
    });
  }
  if (!alreadyExternal) await refuseForeignObjects(ctx, recorded, event.options);
  if (!sameImages(recorded.images, snapshot.images)) {
    // The CCM must render the same objects all run long (and on the way back): the first record wins.
    ctx.progress({
      step: 'preflight',
      message: `the CCM keeps the images recorded before: ${describeOverrides(recorded.images)} (asked now: ${describeOverrides(snapshot.images)})`,
    });
  }
  ctx.progress({
    step: 'preflight',
    message: alreadyExternal
      ? 'already external: nothing to change'
      : [
          `${exam.provider} ${exam.kubernetesVersion}, ${exam.nodes.length} nodes`,
          installNote(exam),
          pinNote(exam),
          exam.endpoint && pinnedNote(exam.endpoint),
          credentialsNote(exam.imageCredentials, exam.kubernetesVersion),
          addressNote(addressChangesOf(exam.nodes, expected)),
          leaderMigration.reason,
        ]
          .filter(Boolean)
          .join('; '),
  });
  return plan;
}

/**
 * Remove the agents' account this preflight created, for a run that ends here (refused, or the cluster
 * external already; a retried attempt applies it again), unless a pre-started Job still waits on it.
 */
async function leaveNoAgentAccount(ctx: StepContext): Promise<void> {
  await removeAgentAccountUnlessAwaited(ctx.clients).catch((cleanup: unknown) => {
    ctx.progress({
      step: 'preflight',
      message: `could not remove the agents' ServiceAccount ccm-migrate-agent: ${(cleanup as Error).message}`,
    });
  });
}

/**
 * A node not Ready ends a fresh run here, before any change. A resumed run may have changed the node
 * itself (a kubelet flipped that never came back, the process cut while it waited): it goes on with its
 * first preflight's plan, so that the steps wait for the node and roll back what the run changed.
 */
function resumedDespite(err: unknown, recorded: unknown, ctx: StepContext): { plan: PreflightResult } {
  const plan = recorded === undefined ? undefined : SnapshotSchema.parse(recorded).plan;
  if (!(err instanceof NodesNotReadyError) || plan === undefined) throw err;
  ctx.progress({
    step: 'preflight',
    message: `${err.message}: the run resumes with the plan of its first preflight, and rolls back if they stay down`,
  });
  return { plan };
}
