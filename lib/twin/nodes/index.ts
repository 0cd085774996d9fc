/**
 * The twin's nodes: each has a directory standing for its root filesystem and a kubelet model that reads
 * its flags and static pod manifests from there, registers its Node, keeps mirror pods for its static
 * pods, runs the pods bound to it (the node agent among them) and can be restarted like
 * `systemctl restart kubelet`. The spec's nodes start with the twin; more can join it while it runs.
 *
 * One shared timer heap and one file-check loop serve every node, so 5,000 nodes cost no more timers
 * than one.
 */
import { InvalidInputError } from '../../errors.ts';
import type { CloudModel, NodePlacement } from '../cloud/model.ts';
import { PROVIDED_NODE_IP } from '../cloud/node-ip.ts';
import type { TwinContext } from '../context.ts';
import { type NodeGroup, NodeGroupSchema } from '../spec.ts';
import type { KubeObject } from '../store.ts';
import { kubernetesMinor } from '../workloads/objects.ts';
import { startProblem } from './binary-start.ts';
import { registerCsiDrivers } from './csi-node.ts';
import { writeHostFiles, writeJoiningHostFiles } from './host-files.ts';
import { readKubeletStartConfig } from './kubelet-config.ts';
import { kubeletAddressing, nodeConditions, nodeLease, registeredNode } from './node-object.ts';
import { registrationName } from './registration-name.ts';
import { StaticPodRunner } from './static-pod-runner.ts';
import { CONFIG_MIRROR } from './static-pods.ts';
import { Timers } from './timers.ts';
import { type PodHost, WorkloadPodRunner } from './workload-pods.ts';

export interface KubeletView {
  readonly node: string;
  readonly flags: ReadonlyMap<string, string>;
  readonly ready: boolean;
  readonly restarts: number;
  /**
   * The Node the kubelet registered as at its last start: another name than `node` when its flags let it
   * take its host's name (see registration-name.ts), and then `node` is left without a kubelet.
   */
  readonly registeredAs: string;
}

export interface JoinOptions {
  /**
   * Files by absolute host path that replace (or add to) the group's files on the new node, rendered like
   * them, as a new launch template would (e.g. a kubeadm-flags.env with --cloud-provider=external).
   */
  readonly files?: Readonly<Record<string, string>>;
}

export interface NodeSimulation {
  /** Whether some kube-apiserver static pod is Running and Ready now (the twin's API answers only then). */
  apiServerReady(): boolean;
  /** This node's kube-apiserver static pod: its port and whether it is Ready; undefined when it runs none. */
  apiServerOn(node: string): { readonly port: number; readonly ready: boolean } | undefined;
  /**
   * Why no kube-apiserver can ever become Ready, when that is so: on every control-plane node, the kubelet
   * exits at start or the kube-apiserver crash-loops on its flags (each named with its node); undefined
   * while one may still come up.
   */
  apiServerBlocked(): string | undefined;
  /**
   * Restart this node's kubelet (as `systemctl restart kubelet`): NotReady now, back (flags re-read) after
   * latencies.kubeletRestart, unless ctx.faults.nodeNeverReturns(node). Resolves once the restart has begun.
   */
  restartKubelet(node: string): Promise<void>;
  /** What the kubelet of a node runs with now (flags as parsed at its last start). */
  kubelet(node: string): KubeletView;
  /**
   * A new node of a spec node group joins (an autoscaler, a replaced instance): named `<group>-<i>` with
   * the first i no node of the twin has had, its instance created in the cloud, its group's files (with
   * opts.files) written, its kubelet started; it registers its Node as a start-up node does, before this
   * resolves. A kubelet whose flags make it exit stays down, as at start-up. Resolves to the node's name;
   * InvalidInputError for an unknown group, a bad file path, or a stopped twin.
   */
  join(group: string, opts?: JoinOptions): Promise<string>;
  stop(): Promise<void>;
}

/** One node's kubelet process. */
interface Kubelet {
  readonly node: string;
  readonly ip: string;
  readonly index: number;
  readonly placement: NodePlacement;
  up: boolean;
  restarts: number;
  flags: ReadonlyMap<string, string>;
  staticPodPath: string;
  /** Why it exited at its last start. */
  problem: string | undefined;
  /** Bumped by each restart, so that only the latest one brings the kubelet back. */
  restartGen: number;
  /** The Node it registered as at its last start. */
  registeredAs: string;
  /** Its command line at its last start. */
  argv: readonly string[];
}

/** Kubelets whose static pod directory one turn of the file-check loop looks at. */
const NODES_PER_FILE_CHECK = 500;
/** The file-check period never goes below this: a 0 in a spec would otherwise spin the loop. */
const MIN_FILE_CHECK_MS = 10;
/** Kubelets started between two turns of the event loop at twin start. */
const KUBELETS_PER_BATCH = 500;

function newKubelet(p: NodePlacement): Kubelet {
  return {
    node: p.name,
    ip: p.ip,
    index: p.index,
    placement: p,
    up: false,
    restarts: 0,
    flags: new Map(),
    staticPodPath: '',
    problem: undefined,
    restartGen: 0,
    registeredAs: p.name,
    argv: [],
  };
}

/** A kubelet serves its own Node (status, pods bound to it) only while registered under that name. */
function serving(k: Kubelet): boolean {
  return k.up && k.registeredAs === k.node;
}

/** The kubelet as the pods bound to its Node see it. */
function podHost(k: Kubelet, stateDir: string, minor: number): PodHost {
  return {
    node: k.node,
    ip: k.ip,
    index: k.index,
    hostname: k.placement.hostname,
    get kubeletArgv() {
      return k.argv;
    },
    restartedKubeletArgv: () => readKubeletStartConfig(stateDir, k.node, minor).argv,
    get kubeletFlags() {
      return k.flags;
    },
    get up() {
      return serving(k);
    },
  };
}

/**
 * The twin names its Nodes in the spec: a host whose kubelet would register under another name from its
 * first start describes a cluster the twin cannot hold (a real one would have that other Node).
 */
function misnamed(k: Kubelet): string {
  return (
    `node ${k.node}: its kubelet would register as ${k.registeredAs} (its host is ${k.placement.hostname}), ` +
    `not as ${k.node}: give the group --hostname-override=${k.node}, or a hostname template that names the host ${k.node}`
  );
}

/** A joining node's extra files, checked as a spec's group files are (absolute paths, text contents). */
function joinFiles(files: JoinOptions['files']): Record<string, string> {
  const parsed = NodeGroupSchema.shape.files.safeParse(files ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'files'}: ${i.message}`);
    throw new InvalidInputError(`a joining node's files are not valid: ${problems.join('; ')}`);
  }
  return parsed.data;
}

export async function startNodes(ctx: TwinContext, cloud: CloudModel): Promise<NodeSimulation> {
  const { spec, store } = ctx;
  const minor = kubernetesMinor(spec.kubernetesVersion);
  const timers = new Timers((err) => console.error('twin kubelet:', err));
  const placements = cloud.placements();
  await writeHostFiles(ctx.stateDir, placements, spec.nodeGroups);

  const groups = new Map(spec.nodeGroups.map((g) => [g.name, g]));
  const kubelets = new Map<string, Kubelet>(placements.map((p) => [p.name, newKubelet(p)]));
  const hosts = new Map([...kubelets].map(([name, k]) => [name, podHost(k, ctx.stateDir, minor)]));
  const staticPods = new StaticPodRunner(ctx, timers, minor);

  const kubeletOf = (node: string): Kubelet => {
    const k = kubelets.get(node);
    if (!k) throw new Error(`the twin has no node ${node}`);
    return k;
  };

  /** Write the node's conditions for a kubelet that is up or gone (when the Node exists). */
  const postStatus = (k: Kubelet): void => {
    const node = store.tryGet('nodes', undefined, k.node);
    if (!node) return;
    const next = structuredClone(node);
    const status = (next.status ?? {}) as { conditions?: ReturnType<typeof nodeConditions> };
    status.conditions = nodeConditions(serving(k), status.conditions);
    next.status = status;
    store.update('nodes', next, { subresource: 'status' });
  };

  /**
   * What a restarted kubelet's status updates write to its existing Node: the node IP annotation (set or
   * removed), and an in-tree kubelet its provider's addresses; an external one leaves them to the CCM.
   */
  const updateAddressing = (k: Kubelet, node: KubeObject): void => {
    const { addresses, fromCloud, providedNodeIP } = kubeletAddressing({
      placement: k.placement,
      version: spec.kubernetesVersion,
      flags: k.flags,
      instance: cloud.instanceFor(k.node),
    });
    let current = node;
    const annotations = { ...current.metadata.annotations };
    if (annotations[PROVIDED_NODE_IP] !== providedNodeIP) {
      if (providedNodeIP === undefined) delete annotations[PROVIDED_NODE_IP];
      else annotations[PROVIDED_NODE_IP] = providedNodeIP;
      current = store.update('nodes', {
        ...structuredClone(current),
        metadata: { ...current.metadata, annotations },
      });
    }
    const status = (current.status ?? {}) as { addresses?: unknown };
    if (
      !fromCloud ||
      addresses.length === 0 ||
      JSON.stringify(status.addresses) === JSON.stringify(addresses)
    ) {
      return;
    }
    store.update(
      'nodes',
      { ...structuredClone(current), status: { ...status, addresses } },
      { subresource: 'status' },
    );
  };

  /**
   * Registration: only a Node that does not exist yet gets the kubelet's labels, taints and cloud fields.
   * A kubelet registered under another name than its Node's creates and heartbeats that other Node, and
   * its own goes Unknown.
   */
  const register = (k: Kubelet): void => {
    const name = k.registeredAs;
    if (name !== k.node) postStatus(k);
    let node: KubeObject | undefined = store.tryGet('nodes', undefined, name);
    if (node) {
      if (name === k.node) {
        postStatus(k);
        updateAddressing(k, store.get('nodes', undefined, name));
      }
    } else {
      node = store.create(
        'nodes',
        registeredNode({
          placement: { ...k.placement, name },
          version: spec.kubernetesVersion,
          flags: k.flags,
          groupLabels: groups.get(k.placement.group)?.labels ?? {},
          groupTaints: groups.get(k.placement.group)?.taints ?? [],
          instance: cloud.instanceFor(name),
        }),
      );
    }
    registerCsiDrivers(
      store,
      node,
      groups.get(k.placement.group)?.csiDrivers ?? [],
      cloud.instanceFor(name)?.id ?? name,
    );
    const lease = nodeLease(node);
    const existing = store.tryGet('leases.coordination.k8s.io', 'kube-node-lease', name);
    if (existing)
      store.update('leases.coordination.k8s.io', { ...structuredClone(existing), spec: lease.spec });
    else store.create('leases.coordination.k8s.io', lease);
  };

  const pods = new WorkloadPodRunner({
    ctx,
    timers,
    minor,
    host: (node) => hosts.get(node),
    restartKubelet: (node) => restartKubelet(node),
    // The real file source watches its directory with inotify (pkg/kubelet/config/file_linux.go) and
    // relists only as a fallback: a manifest the agent rewrote is seen at once, not at the next poll.
    filesWritten: (node) => {
      const k = kubelets.get(node);
      if (k) syncFiles(k);
    },
  });

  const syncFiles = (k: Kubelet): void => {
    try {
      if (k.up) staticPods.sync(k);
    } catch (err) {
      console.error(`twin kubelet ${k.node}:`, err);
    }
  };

  /** The kubelet process starts: flags read, exits on bad ones, else registers and syncs its pods. */
  const startKubelet = (
    k: Kubelet,
    initial: boolean,
    config = readKubeletStartConfig(ctx.stateDir, k.node, minor),
  ): void => {
    k.flags = config.flags;
    k.argv = config.argv;
    k.staticPodPath = config.staticPodPath;
    k.problem = config.problem ?? startProblem('kubelet', minor, config.flags) ?? config.pluginProblem;
    if (k.problem) return;
    k.registeredAs = registrationName(k.placement, config.flags);
    if (initial && k.registeredAs !== k.node) throw new InvalidInputError(misnamed(k));
    k.up = true;
    register(k);
    staticPods.sync(k, initial);
    if (!initial) staticPods.ensureMirrors(k);
    const host = hosts.get(k.node);
    if (host && serving(k)) pods.resume(host);
  };

  const restartKubelet = async (node: string): Promise<void> => {
    const k = kubeletOf(node);
    k.restarts++;
    const gen = ++k.restartGen;
    if (k.up) {
      k.up = false;
      staticPods.pause(node);
      postStatus(k);
    }
    timers.after(spec.latencies.kubeletRestart, () => {
      if (k.restartGen !== gen || ctx.faults.nodeNeverReturns(node)) return;
      startKubelet(k, false);
    });
  };

  const unsubscribe = store.subscribe((event) => {
    if (event.key !== 'pods') return;
    if (event.type === 'DELETED' && event.object.metadata.annotations?.[CONFIG_MIRROR]) {
      staticPods.mirrorDeleted(event.object);
    }
    pods.observe(event.type, event.object);
  });

  const all = [...kubelets.values()];
  try {
    for (let i = 0; i < all.length; i += KUBELETS_PER_BATCH) {
      for (const k of all.slice(i, i + KUBELETS_PER_BATCH)) startKubelet(k, true);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } catch (err) {
    // A spec the twin cannot hold: nothing of the kubelets started so far may keep running.
    timers.stop();
    unsubscribe();
    throw err;
  }
  for (const pod of store.list('pods').items) pods.observe('ADDED', pod);

  // The file source's poll, spread over turns: each turn looks at the next slice of kubelets, and lets
  // in the nodes whose nodeJoins fault has come due (with their group's files from the spec).
  let cursor = 0;
  let loop: NodeJS.Timeout | undefined;
  const period = Math.max(spec.latencies.fileCheck, MIN_FILE_CHECK_MS);
  const fileCheck = (): void => {
    for (let n = 0; n < Math.min(NODES_PER_FILE_CHECK, all.length); n++) {
      const k = all[cursor] as Kubelet;
      cursor = (cursor + 1) % all.length;
      syncFiles(k);
    }
    for (const f of ctx.faults.joinsDue()) {
      join(f.group).catch((err: unknown) => console.error(`twin nodeJoins ${f.group}:`, err));
    }
    if (!ctx.signal.aborted) loop = setTimeout(fileCheck, period);
  };
  loop = setTimeout(fileCheck, period);

  let stopped = false;

  /** The first `<group>-<i>` that no node of the twin (placed in the cloud) nor any Node object holds. */
  const freeName = (group: NodeGroup): string => {
    for (let i = 1; ; i++) {
      const name = `${group.name}-${i}`;
      if (!cloud.placement(name) && !store.tryGet('nodes', undefined, name)) return name;
    }
  };

  // Synchronous from the name's choice to the Node's registration, so concurrent joins never race.
  const join = async (groupName: string, opts: JoinOptions = {}): Promise<string> => {
    if (stopped || ctx.signal.aborted)
      throw new InvalidInputError('the twin has stopped: no node can join it');
    const group = spec.nodeGroups.find((g) => g.name === groupName);
    if (!group) {
      const known = spec.nodeGroups.map((g) => g.name).join(', ');
      throw new InvalidInputError(`the twin has no node group ${groupName} (its groups: ${known})`);
    }
    const files = { ...group.files, ...joinFiles(opts.files) };
    const placement = cloud.addNode(freeName(group), group.name);
    writeJoiningHostFiles(ctx.stateDir, placement, files);
    const k = newKubelet(placement);
    const config = readKubeletStartConfig(ctx.stateDir, k.node, minor);
    const name = registrationName(placement, config.flags);
    if (name !== k.node) throw new InvalidInputError(misnamed({ ...k, registeredAs: name }));
    kubelets.set(k.node, k);
    hosts.set(k.node, podHost(k, ctx.stateDir, minor));
    all.push(k);
    startKubelet(k, false, config);
    return k.node;
  };

  const apiServerBlocked = (): string | undefined => {
    const reasons: string[] = [];
    for (const k of all) {
      if (k.placement.role !== 'control-plane') continue;
      const problem = k.problem
        ? `the kubelet exits at start: ${k.problem}`
        : staticPods.apiServerProblem(k.node) &&
          `kube-apiserver crash-loops: ${staticPods.apiServerProblem(k.node)}`;
      if (!problem) return undefined;
      reasons.push(`${k.node}: ${problem}`);
    }
    return reasons.length ? reasons.join('; ') : undefined;
  };

  return {
    apiServerReady: () => staticPods.apiServerReady(),
    apiServerOn: (node) => staticPods.apiServerOn(node),
    apiServerBlocked,
    restartKubelet,
    kubelet: (node) => {
      const k = kubeletOf(node);
      return { node, flags: k.flags, ready: serving(k), restarts: k.restarts, registeredAs: k.registeredAs };
    },
    join,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      clearTimeout(loop);
      timers.stop();
      unsubscribe();
    },
  };
}
