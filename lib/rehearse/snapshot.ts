/**
 * `twin snapshot`: a twin spec that reproduces a live cluster, read without changing it (the node agent's
 * read-only Jobs aside). Its version, cloud (provider, region, zones, and each node's instance: address,
 * providerID, zone, type), its nodes grouped by what they share (role, files, labels, taints, hostname
 * pattern), the objects the migration reads in kube-system, its LoadBalancer Services, and placeholders for
 * what it must not copy (cloud configs, credential plugins, Secrets), and its storage (storage-objects.ts):
 * the volumes, claims, classes and CSI drivers preflight inventories, and each node's registered drivers.
 */
import type { V1Node, V1Service } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { cloudFlagsOf } from '../controlplane/static-pod.ts';
import { AgentFailedError, InvalidInputError } from '../errors.ts';
import type { KubeClients } from '../kube/clients.ts';
import { call, orNotFound } from '../kube/errors.ts';
import { UNINITIALIZED_TAINT } from '../kube/well-known.ts';
import { providerForInTreeName } from '../providers/catalog.ts';
import { providerOfProviderID } from '../providers/provider-id.ts';
import type { InstanceSpec, NodeGroup, Provider, TwinSpecInput } from '../twin/spec.ts';
import {
  type AgentCall,
  type ClusterFiles,
  type NodeFileSet,
  readClusterFiles,
  type WithheldKind,
} from './node-files.ts';
import { type OpenStackCredentials, openStackCredentials } from './openstack-credentials.ts';
import { placeholderFile } from './placeholders.ts';
import { portable } from './portable.ts';
import { storageSnapshot } from './storage-objects.ts';

const CONTROL_PLANE_ROLE = 'node-role.kubernetes.io/control-plane';
const LEGACY_MASTER_ROLE = 'node-role.kubernetes.io/master';
const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const INSTANCE_TYPE = 'node.kubernetes.io/instance-type';

/** Labels the twin's kubelets and cloud controllers set themselves: a group carries only the others. */
const SET_BY_THE_TWIN = new Set([
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'kubernetes.io/arch',
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  CONTROL_PLANE_ROLE,
  'node.kubernetes.io/exclude-from-external-load-balancers',
  ZONE,
  REGION,
  INSTANCE_TYPE,
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'beta.kubernetes.io/instance-type',
]);

/** The objects of kube-system the migration reads (kubeadm's). */
const KUBE_SYSTEM_CONFIGMAPS = ['kubeadm-config', 'kubelet-config'];

export interface SnapshotOptions {
  readonly clients: KubeClients;
  readonly agent: AgentCall;
  readonly runId: string;
  readonly onProgress?: (message: string) => void;
}

export interface Snapshot {
  /** The spec, its host files inline (writeSnapshotSpec puts each distinct one in a file of its own). */
  readonly spec: TwinSpecInput;
  /** The host paths that got a placeholder (on the nodes that name them). */
  readonly placeholders: readonly string[];
  readonly jobs: number;
}

type Taint = NodeGroup['taints'][number];

interface NodeFacts {
  readonly node: V1Node;
  readonly name: string;
  readonly role: 'control-plane' | 'worker';
  readonly ip: string;
  readonly labels: Record<string, string>;
  readonly taints: Taint[];
}

function internalIPv4(node: V1Node): string | undefined {
  return node.status?.addresses?.find(
    (a) => a.type === 'InternalIP' && /^\d{1,3}(\.\d{1,3}){3}$/.test(a.address),
  )?.address;
}

function factsOf(node: V1Node): NodeFacts {
  const name = node.metadata?.name as string;
  const labels = node.metadata?.labels ?? {};
  const role = CONTROL_PLANE_ROLE in labels || LEGACY_MASTER_ROLE in labels ? 'control-plane' : 'worker';
  const ip = internalIPv4(node);
  if (!ip) {
    throw new InvalidInputError(
      `node ${name} has no IPv4 InternalIP: the snapshot cannot template its files with its address`,
    );
  }
  const ownLabels = Object.fromEntries(Object.entries(labels).filter(([k]) => !SET_BY_THE_TWIN.has(k)));
  // Taints that the kubelet, kubeadm or a controller puts on (conditions, the uninitialized taint) come
  // back on the twin by themselves.
  const taints = (node.spec?.taints ?? [])
    .filter(
      (t) =>
        !t.key.startsWith('node.kubernetes.io/') &&
        t.key !== UNINITIALIZED_TAINT &&
        !(role === 'control-plane' && t.key === CONTROL_PLANE_ROLE),
    )
    .map((t) => ({
      key: t.key,
      ...(t.value ? { value: t.value } : {}),
      effect: t.effect as Taint['effect'],
    }));
  return { node, name, role, ip, labels: ownLabels, taints };
}

function requireReady(nodes: readonly V1Node[]): void {
  const notReady = nodes.filter(
    (n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True',
  );
  if (notReady.length > 0) {
    throw new AgentFailedError(
      `node(s) ${notReady.map((n) => n.metadata?.name).join(', ')} not Ready: the node agent cannot run there to read their files (bring them back, or take them out of the cluster, then snapshot again)`,
    );
  }
}

/** The twin's provider name: the catalog's, but `gce` for GCP (the in-tree name the twin spec uses). */
function twinProvider(catalog: string | undefined): Provider | undefined {
  return catalog === 'gcp' ? 'gce' : (catalog as Provider | undefined);
}

function detectProvider(nodes: readonly NodeFacts[], files: ClusterFiles): Provider {
  for (const { node } of nodes) {
    const p = node.spec?.providerID && providerOfProviderID(node.spec.providerID);
    if (p) return twinProvider(p) as Provider;
  }
  // A cluster no cloud controller initialised yet: the control plane's in-tree flag says which cloud.
  for (const text of files.texts.values()) {
    let flag: string | undefined;
    try {
      flag = cloudFlagsOf(text)['cloud-provider'];
    } catch {
      continue;
    }
    const p = flag && providerForInTreeName(flag);
    if (p) return twinProvider(p) as Provider;
  }
  throw new InvalidInputError(
    'cannot tell the cluster’s cloud: no node has a providerID and no static pod names an in-tree --cloud-provider',
  );
}

/** `gce://<project>/<zone>/<name>`: the project, which the twin's GCE cloud names in providerIDs. */
function gceProject(nodes: readonly NodeFacts[]): string | undefined {
  for (const { node } of nodes) {
    const m = /^gce:\/\/([^/]+)\//.exec(node.spec?.providerID ?? '');
    if (m) return m[1];
  }
  return undefined;
}

function cloudOf(nodes: readonly NodeFacts[], files: ClusterFiles): TwinSpecInput['cloud'] {
  const label = (n: NodeFacts, key: string, legacy: string): string | undefined =>
    n.node.metadata?.labels?.[key] ?? n.node.metadata?.labels?.[legacy];
  const region =
    nodes.map((n) => label(n, REGION, 'failure-domain.beta.kubernetes.io/region')).find(Boolean) ?? 'unknown';
  const zones = [
    ...new Set(nodes.map((n) => label(n, ZONE, 'failure-domain.beta.kubernetes.io/zone')).filter(Boolean)),
  ].sort() as string[];
  const instances: Record<string, InstanceSpec> = {};
  for (const n of nodes) {
    const zone = label(n, ZONE, 'failure-domain.beta.kubernetes.io/zone');
    const instanceType = label(n, INSTANCE_TYPE, 'beta.kubernetes.io/instance-type');
    instances[n.name] = {
      ip: n.ip,
      ...(n.node.spec?.providerID ? { providerID: n.node.spec.providerID } : {}),
      ...(zone ? { zone } : {}),
      ...(instanceType ? { instanceType } : {}),
    };
  }
  const project = gceProject(nodes);
  return {
    provider: detectProvider(nodes, files),
    region,
    zones: zones.length > 0 ? zones : [`${region}a`],
    ...(project ? { project } : {}),
    instances,
  };
}

/** The hostname as a group template (`{name}`, `{ip-dashed}`), or the literal name when neither fits. */
function hostnameTemplate(set: NodeFileSet): string {
  const dashed = set.ip.replaceAll('.', '-');
  const template = set.hostname.replaceAll(set.name, '{name}').replaceAll(dashed, '{ip-dashed}');
  const back = template.replaceAll('{name}', set.name).replaceAll('{ip-dashed}', dashed);
  return back === set.hostname ? template : set.hostname;
}

interface GroupDraft {
  readonly role: 'control-plane' | 'worker';
  readonly names: string[];
  readonly hostname: string;
  readonly labels: Record<string, string>;
  readonly taints: Taint[];
  /** The CSI drivers its kubelets registered (their CSINodes). */
  readonly csiDrivers: string[];
  /** By path: the sha256 of its text (a key of ClusterFiles.texts). */
  readonly files: Record<string, string>;
  /** By path: the kind of placeholder it gets. */
  readonly withheld: Record<string, WithheldKind>;
}

/** Nodes that share role, files, labels, taints, CSI drivers and hostname pattern share one group. */
function groupNodes(
  nodes: readonly NodeFacts[],
  files: ClusterFiles,
  drivers: ReadonlyMap<string, string[]>,
): GroupDraft[] {
  const sets = new Map(files.nodes.map((s) => [s.name, s]));
  const groups = new Map<string, GroupDraft>();
  for (const n of nodes) {
    const set = sets.get(n.name) as NodeFileSet;
    const draft = {
      role: n.role,
      hostname: hostnameTemplate(set),
      labels: n.labels,
      taints: n.taints,
      csiDrivers: drivers.get(n.name) ?? [],
      files: set.files,
      withheld: set.withheld,
    };
    const key = JSON.stringify(draft, (_, v) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v,
    );
    const group = groups.get(key) ?? { ...draft, files: { ...set.files }, names: [] };
    group.names.push(n.name);
    groups.set(key, group);
  }
  // Control-plane groups first: the twin's kube-apiserver runs there.
  return [...groups.values()].sort((a, b) => Number(a.role === 'worker') - Number(b.role === 'worker'));
}

function groupName(role: GroupDraft['role'], index: number): string {
  const base = role === 'control-plane' ? 'cp' : 'worker';
  return index === 0 ? base : `${base}-${index + 1}`;
}

/** A LoadBalancer Service without what its cluster allocated (IPs, node ports) or reported (status). */
function portableService(svc: V1Service): Record<string, unknown> {
  const { clusterIP, clusterIPs, healthCheckNodePort, ports, ...spec } = svc.spec ?? {};
  return portable('v1', 'Service', svc, {
    spec: { ...spec, ...(ports ? { ports: ports.map(({ nodePort, ...p }) => p) } : {}) },
  });
}

async function apiObjects(clients: KubeClients): Promise<Record<string, unknown>[]> {
  const objects: Record<string, unknown>[] = [];
  for (const name of KUBE_SYSTEM_CONFIGMAPS) {
    const cm = await orNotFound(
      call(`read ConfigMap kube-system/${name}`, () =>
        clients.core.readNamespacedConfigMap({ name, namespace: 'kube-system' }),
      ),
    );
    if (cm) objects.push(portable('v1', 'ConfigMap', cm, { data: cm.data ?? {} }));
  }
  const services = await call('list Services', () => clients.core.listServiceForAllNamespaces());
  const balanced = services.items.filter((s) => s.spec?.type === 'LoadBalancer');
  const namespaces = [...new Set(balanced.map((s) => s.metadata?.namespace as string))].filter(
    (ns) => ns !== 'default' && ns !== 'kube-system',
  );
  for (const ns of namespaces) objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  objects.push(...balanced.map(portableService));
  return objects;
}

/** kubeadm's clusterName, as a DNS label, names the spec. */
function specName(objects: readonly Record<string, unknown>[]): string {
  const kubeadm = objects.find((o) => (o.metadata as { name: string }).name === 'kubeadm-config');
  const text = (kubeadm?.data as Record<string, string> | undefined)?.ClusterConfiguration;
  let name: unknown;
  try {
    name = text ? (parseYaml(text) as { clusterName?: unknown })?.clusterName : undefined;
  } catch {
    name = undefined;
  }
  const label = String(name ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return label || 'snapshot';
}

function kubernetesVersion(gitVersion: string): string {
  const m = /^v?(1\.\d+\.\d+)/.exec(gitVersion);
  if (!m) throw new InvalidInputError(`the API server reports version ${gitVersion}, not a Kubernetes 1.x.y`);
  return `v${m[1]}`;
}

/** The cloud.conf of the first control-plane node, and what its placeholder and the twin's Secret say. */
async function openStackFacts(
  opts: SnapshotOptions,
  nodes: readonly NodeFacts[],
  files: ClusterFiles,
): Promise<{ cloudConf: string; credentials: OpenStackCredentials } | undefined> {
  const node = nodes.find((n) => n.role === 'control-plane') as NodeFacts;
  const set = files.nodes.find((s) => s.name === node.name);
  const cloudConf = Object.entries(set?.withheld ?? {}).find(([, kind]) => kind === 'cloud-config')?.[0];
  if (!cloudConf) return undefined;
  const credentials = await openStackCredentials({ ...opts, node: node.name, cloudConf });
  return { cloudConf, credentials };
}

export async function takeSnapshot(opts: SnapshotOptions): Promise<Snapshot> {
  const { clients } = opts;
  const progress = opts.onProgress ?? (() => undefined);
  const version = await call(`reach the API server at ${clients.server}`, () => clients.version.getCode());
  const list = await call('list Nodes', () => clients.core.listNode());
  if (list.items.length === 0) throw new InvalidInputError('the cluster has no nodes: nothing to snapshot');
  requireReady(list.items);
  const nodes = list.items.map(factsOf);
  if (!nodes.some((n) => n.role === 'control-plane')) {
    throw new InvalidInputError(
      `no node is labelled ${CONTROL_PLANE_ROLE}: the snapshot reads the control plane's static pods from those nodes (a managed control plane has none to migrate)`,
    );
  }
  progress(`reading the files of ${nodes.length} node(s) through the node agent (read-only Jobs)`);
  const files = await readClusterFiles({
    nodes: nodes.map((n) => ({ name: n.name, ip: n.ip })),
    agent: opts.agent,
    runId: opts.runId,
  });
  progress(`${files.texts.size} distinct file(s) read in ${files.jobs} agent Job(s)`);
  const objects = await apiObjects(clients);
  const storage = await storageSnapshot(clients);
  objects.push(...storage.objects);
  const cloud = cloudOf(nodes, files);
  const openstack = cloud.provider === 'openstack' ? await openStackFacts(opts, nodes, files) : undefined;
  if (openstack?.credentials.secret) objects.push(openstack.credentials.secret);
  const drafts = groupNodes(nodes, files, storage.drivers);
  const placeholders = new Set<string>();
  const seen = { 'control-plane': 0, worker: 0 };
  const nodeGroups = drafts.map((d) => {
    const hostFiles: Record<string, string> = {};
    for (const [p, hash] of Object.entries(d.files)) hostFiles[p] = files.texts.get(hash) as string;
    for (const [p, kind] of Object.entries(d.withheld)) {
      const lines = p === openstack?.cloudConf ? openstack.credentials.cloudConfLines : '';
      hostFiles[p] = placeholderFile(p, kind, lines);
      placeholders.add(p);
    }
    return {
      name: groupName(d.role, seen[d.role]++),
      count: d.names.length,
      names: d.names,
      role: d.role,
      ...(d.hostname === '{name}' ? {} : { hostname: d.hostname }),
      ...(Object.keys(d.labels).length > 0 ? { labels: d.labels } : {}),
      ...(d.taints.length > 0 ? { taints: d.taints } : {}),
      ...(d.csiDrivers.length > 0 ? { csiDrivers: d.csiDrivers } : {}),
      files: hostFiles,
    };
  });
  return {
    spec: {
      kind: 'ClusterTwin',
      name: specName(objects),
      kubernetesVersion: kubernetesVersion(version.gitVersion),
      cloud,
      nodeGroups,
      objects: objects as TwinSpecInput['objects'],
    },
    placeholders: [...placeholders].sort(),
    jobs: files.jobs,
  };
}
