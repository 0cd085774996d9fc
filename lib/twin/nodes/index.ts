/**
 * The twin's nodes: each has a directory standing for its root filesystem and a kubelet model that reads
 * its flags and static pod manifests from there, registers its Node, keeps mirror pods for its static
 * pods, runs the pods bound to it (the node agent among them) and can be restarted like
 * `systemctl restart kubelet`.
 *
 * One shared timer heap and one file-check loop serve every node, so 5,000 nodes cost no more timers
 * than one.
 */
import { cloudFlagProblem, kubernetesMinor } from '../../controlplane/cloud-flag-rules.ts';
import type { CloudModel, NodePlacement } from '../cloud/model.ts';
import type { TwinContext } from '../context.ts';
import type { KubeObject } from '../store.ts';
import { writeHostFiles } from './host-files.ts';
import { readKubeletStartConfig } from './kubelet-config.ts';
import { nodeConditions, nodeLease, registeredNode } from './node-object.ts';
import { StaticPodRunner } from './static-pod-runner.ts';
import { CONFIG_MIRROR } from './static-pods.ts';
import { Timers } from './timers.ts';
import { WorkloadPodRunner } from './workload-pods.ts';

export interface KubeletView {
  readonly node: string;
  readonly flags: ReadonlyMap<string, string>;
  readonly ready: boolean;
  readonly restarts: number;
}

export interface NodeSimulation {
  /** Whether some kube-apiserver static pod is Running and Ready now (the twin's API answers only then). */
  apiServerReady(): boolean;
  /**
   * Restart this node's kubelet (as `systemctl restart kubelet`): NotReady now, back (flags re-read) after
   * latencies.kubeletRestart, unless ctx.faults.nodeNeverReturns(node). Resolves once the restart has begun.
   */
  restartKubelet(node: string): Promise<void>;
  /** What the kubelet of a node runs with now (flags as parsed at its last start). */
  kubelet(node: string): KubeletView;
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
}

/** Kubelets whose static pod directory one turn of the file-check loop looks at. */
const NODES_PER_FILE_CHECK = 500;
/** The file-check period never goes below this: a 0 in a spec would otherwise spin the loop. */
const MIN_FILE_CHECK_MS = 10;
/** Kubelets started between two turns of the event loop at twin start. */
const KUBELETS_PER_BATCH = 500;

export async function startNodes(ctx: TwinContext, cloud: CloudModel): Promise<NodeSimulation> {
  const { spec, store } = ctx;
  const minor = kubernetesMinor(spec.kubernetesVersion);
  const timers = new Timers((err) => console.error('twin kubelet:', err));
  const placements = cloud.placements();
  await writeHostFiles(ctx.stateDir, placements, spec.nodeGroups);

  const groupLabels = new Map(spec.nodeGroups.map((g) => [g.name, g.labels]));
  const kubelets = new Map<string, Kubelet>(
    placements.map((p) => [
      p.name,
      {
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
      },
    ]),
  );
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
    status.conditions = nodeConditions(k.up, status.conditions);
    next.status = status;
    store.update('nodes', next, { subresource: 'status' });
  };

  /** Registration: only a Node that does not exist yet gets the kubelet's labels, taints and cloud fields. */
  const register = (k: Kubelet): void => {
    let node: KubeObject | undefined = store.tryGet('nodes', undefined, k.node);
    if (node) {
      postStatus(k);
    } else {
      node = store.create(
        'nodes',
        registeredNode({
          placement: k.placement,
          version: spec.kubernetesVersion,
          flags: k.flags,
          groupLabels: groupLabels.get(k.placement.group) ?? {},
          instance: cloud.instanceFor(k.node),
        }),
      );
    }
    const lease = nodeLease(node);
    const existing = store.tryGet('leases.coordination.k8s.io', 'kube-node-lease', k.node);
    if (existing)
      store.update('leases.coordination.k8s.io', { ...structuredClone(existing), spec: lease.spec });
    else store.create('leases.coordination.k8s.io', lease);
  };

  const pods = new WorkloadPodRunner({
    ctx,
    timers,
    minor,
    host: (node) => kubelets.get(node),
    restartKubelet: (node) => restartKubelet(node),
  });

  /** The kubelet process starts: flags read, exits on bad ones, else registers and syncs its pods. */
  const startKubelet = (k: Kubelet, initial: boolean): void => {
    const config = readKubeletStartConfig(ctx.stateDir, k.node);
    k.flags = config.flags;
    k.staticPodPath = config.staticPodPath;
    k.problem = config.problem ?? cloudFlagProblem('kubelet', spec.kubernetesVersion, config.flags);
    if (k.problem) return;
    k.up = true;
    register(k);
    staticPods.sync(k, initial);
    if (!initial) staticPods.ensureMirrors(k);
    pods.resume(k);
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
  for (let i = 0; i < all.length; i += KUBELETS_PER_BATCH) {
    for (const k of all.slice(i, i + KUBELETS_PER_BATCH)) startKubelet(k, true);
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const pod of store.list('pods').items) pods.observe('ADDED', pod);

  // The file source's poll, spread over turns: each turn looks at the next slice of kubelets.
  let cursor = 0;
  let loop: NodeJS.Timeout | undefined;
  const period = Math.max(spec.latencies.fileCheck, MIN_FILE_CHECK_MS);
  const fileCheck = (): void => {
    for (let n = 0; n < Math.min(NODES_PER_FILE_CHECK, all.length); n++) {
      const k = all[cursor] as Kubelet;
      cursor = (cursor + 1) % all.length;
      try {
        if (k.up) staticPods.sync(k);
      } catch (err) {
        console.error(`twin kubelet ${k.node}:`, err);
      }
    }
    if (!ctx.signal.aborted) loop = setTimeout(fileCheck, period);
  };
  loop = setTimeout(fileCheck, period);

  let stopped = false;
  return {
    apiServerReady: () => staticPods.apiServerReady(),
    restartKubelet,
    kubelet: (node) => {
      const k = kubeletOf(node);
      return { node, flags: k.flags, ready: k.up, restarts: k.restarts };
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      clearTimeout(loop);
      timers.stop();
      unsubscribe();
    },
  };
}
