/**
 * The Node a kubelet registers and the status it keeps on it (pkg/kubelet/kubelet_node_status.go and
 * pkg/kubelet/nodestatus/setters.go), plus the Lease it heartbeats through (kube-node-lease).
 */
import { createHash } from 'node:crypto';
import { UNINITIALIZED_TAINT } from '../../kube/well-known.ts';
import type { Instance, NodeAddress, NodePlacement } from '../cloud/model.ts';
import { kubeletNodeIPs, narrowToNodeIPs, PROVIDED_NODE_IP, specific } from '../cloud/node-ip.ts';
import type { KubeObject } from '../store.ts';
import { kubernetesMinor } from '../workloads/objects.ts';
import { compiledIn } from './binary-start.ts';
import { nowISO } from './pod-status.ts';

export const CONTROL_PLANE_ROLE = 'node-role.kubernetes.io/control-plane';

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

/** The pressure conditions and Ready, as a running kubelet reports them. */
const HEALTHY: readonly (readonly [string, 'True' | 'False', string, string])[] = [
  ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
  ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
  ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
  ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
];

/**
 * Node conditions for a kubelet that is up (`true`) or gone. A kubelet that stops posting status gets
 * every condition set to Unknown by the node lifecycle controller (pkg/controller/nodelifecycle); the
 * twin applies that at once instead of after node-monitor-grace-period. lastTransitionTime moves only
 * when a condition's status changes.
 */
export function nodeConditions(up: boolean, previous: readonly NodeCondition[] = []): NodeCondition[] {
  const now = nowISO();
  const before = new Map(previous.map((c) => [c.type, c]));
  return HEALTHY.map(([type, healthy, reason, message]) => {
    const old = before.get(type);
    const status = up ? healthy : 'Unknown';
    return {
      type,
      status,
      reason: up ? reason : 'NodeStatusUnknown',
      message: up ? message : 'Kubelet stopped posting node status.',
      lastHeartbeatTime: up ? now : (old?.lastHeartbeatTime ?? now),
      lastTransitionTime: old?.status === status ? old.lastTransitionTime : now,
    };
  });
}

function hex(seed: string, algorithm = 'sha256'): string {
  return createHash(algorithm).update(seed).digest('hex');
}

function uuidFrom(seed: string): string {
  const h = hex(seed);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** `--node-labels=a=b,c=d`. */
function parseLabels(value: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const entry of (value ?? '').split(',')) {
    const [k, ...rest] = entry.split('=');
    if (k) labels[k.trim()] = rest.join('=').trim();
  }
  return labels;
}

/** `--register-with-taints=key=value:Effect,key:Effect`. */
function parseTaints(value: string | undefined): Taint[] {
  const taints: Taint[] = [];
  for (const entry of (value ?? '').split(',')) {
    const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(entry.trim());
    if (m) taints.push({ key: m[1] as string, ...(m[2] ? { value: m[2] } : {}), effect: m[3] as string });
  }
  return taints;
}

export interface RegistrationInput {
  readonly placement: NodePlacement;
  readonly version: string;
  readonly flags: ReadonlyMap<string, string>;
  /** Labels of the node's group in the spec. */
  readonly groupLabels: Readonly<Record<string, string>>;
  /** Taints of the node's group in the spec, before those the kubelet registers with. */
  readonly groupTaints?: readonly Taint[];
  /** The node's instance, used only by a kubelet with an in-tree --cloud-provider. */
  readonly instance: Instance | undefined;
}

/** What a kubelet writes of a Node's addresses: the list (none when it failed) and the node IP annotation. */
export interface KubeletAddressing {
  readonly addresses: NodeAddress[];
  /** Whether they come from an in-tree provider: such a kubelet writes them at every status update. */
  readonly fromCloud: boolean;
  /** alpha.kubernetes.io/provided-node-ip; undefined: the kubelet removes it. */
  readonly providedNodeIP: string | undefined;
}

/**
 * The addresses a kubelet reports (see cloud/node-ip.ts): an in-tree one its provider's list narrowed to
 * --node-ip (none when its node IP is not listed: the kubelet logs the error and sets none), any other its
 * --node-ip, else its host's IP, and its name. Only a kubelet with a --cloud-provider annotates.
 */
export function kubeletAddressing(
  input: Omit<RegistrationInput, 'groupLabels' | 'groupTaints'>,
): KubeletAddressing {
  const { placement, flags } = input;
  const provider = flags.get('cloud-provider') ?? '';
  const minor = kubernetesMinor(input.version);
  const inTree = compiledIn(provider, minor) ? input.instance : undefined;
  const parsed = kubeletNodeIPs(flags.get('node-ip'), provider, minor);
  const ips = 'ips' in parsed ? parsed.ips : [];
  const nodeIP = specific(ips[0]) ? ips : [];
  const providedNodeIP = provider !== '' && nodeIP.length > 0 ? nodeIP.join(',') : undefined;
  if (inTree) {
    const listed = inTree.inTreeAddresses.map((a) => ({ ...a }));
    const addresses = nodeIP.length > 0 ? (narrowToNodeIPs(nodeIP, listed) ?? []) : listed;
    return { addresses, fromCloud: true, providedNodeIP };
  }
  return {
    addresses: [
      { type: 'InternalIP', address: nodeIP[0] ?? placement.ip },
      { type: 'Hostname', address: placement.name },
    ],
    fromCloud: false,
    providedNodeIP,
  };
}

/**
 * The Node a kubelet creates at registration. Its cloud fields depend on --cloud-provider:
 * - in-tree (aws, gce, …): the kubelet asks the cloud itself: providerID, the instance's addresses and
 *   the topology/instance-type labels (with their deprecated beta twins, still set by in-tree kubelets);
 * - `external`: no cloud fields, and the node.cloudprovider.kubernetes.io/uninitialized taint until a
 *   cloud-controller-manager initialises it (KEP-2395);
 * - none: no cloud fields, no taint.
 * Control-plane nodes get kubeadm's role label, exclusion label and NoSchedule taint
 * (cmd/kubeadm/app/phases/markcontrolplane).
 */
export function registeredNode(input: RegistrationInput): KubeObject {
  const { placement, flags, instance } = input;
  const name = placement.name;
  const provider = flags.get('cloud-provider') ?? '';
  const minor = kubernetesMinor(input.version);
  const inTree = compiledIn(provider, minor) ? instance : undefined;
  const { addresses, providedNodeIP } = kubeletAddressing(input);
  const labels: Record<string, string> = {
    ...input.groupLabels,
    ...parseLabels(flags.get('node-labels')),
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': name,
    'kubernetes.io/os': 'linux',
  };
  const registered = parseTaints(flags.get('register-with-taints'));
  // A group's taint that the kubelet registers with anyway is put on once (a Node's taints are unique).
  const taints = [
    ...(input.groupTaints ?? [])
      .filter((t) => !registered.some((r) => r.key === t.key && r.effect === t.effect))
      .map((t) => ({ ...t })),
    ...registered,
  ];
  if (placement.role === 'control-plane') {
    labels[CONTROL_PLANE_ROLE] = '';
    labels['node.kubernetes.io/exclude-from-external-load-balancers'] = '';
    taints.push({ key: CONTROL_PLANE_ROLE, effect: 'NoSchedule' });
  }
  if (provider === 'external') taints.push({ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' });
  if (inTree) {
    Object.assign(labels, {
      'topology.kubernetes.io/region': inTree.region,
      'topology.kubernetes.io/zone': inTree.zone,
      'node.kubernetes.io/instance-type': inTree.instanceType,
      'failure-domain.beta.kubernetes.io/region': inTree.region,
      'failure-domain.beta.kubernetes.io/zone': inTree.zone,
      'beta.kubernetes.io/instance-type': inTree.instanceType,
    });
  }
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels,
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        ...(providedNodeIP === undefined ? {} : { [PROVIDED_NODE_IP]: providedNodeIP }),
      },
    },
    spec: {
      ...(inTree ? { providerID: inTree.providerID } : {}),
      ...(taints.length > 0 ? { taints } : {}),
    },
    status: {
      conditions: nodeConditions(true),
      addresses,
      capacity: {
        cpu: '2',
        'ephemeral-storage': '20134592Ki',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
        memory: '8024428Ki',
        pods: '110',
      },
      allocatable: {
        cpu: '2',
        'ephemeral-storage': '18556039957',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
        memory: '7922028Ki',
        pods: '110',
      },
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: hex(`machine/${name}`, 'md5'),
        systemUUID: uuidFrom(`system/${name}`),
        bootID: uuidFrom(`boot/${name}`),
        kernelVersion: '5.15.0-105-generic',
        osImage: 'Ubuntu 22.04.4 LTS',
        containerRuntimeVersion: 'containerd://1.7.13',
        kubeletVersion: input.version,
        // Deprecated, and no longer filled in by kubelets from 1.31 (KEP-4004).
        kubeProxyVersion: minor < 31 ? input.version : '',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  };
}

/** The node's heartbeat Lease in kube-node-lease, owned by its Node (pkg/kubelet/nodelease). */
export function nodeLease(node: KubeObject): KubeObject {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: node.metadata.name,
      namespace: 'kube-node-lease',
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid: node.metadata.uid ?? '' },
      ],
    },
    spec: {
      holderIdentity: node.metadata.name,
      leaseDurationSeconds: 40,
      renewTime: new Date().toISOString().replace('Z', '000Z'),
    },
  };
}
