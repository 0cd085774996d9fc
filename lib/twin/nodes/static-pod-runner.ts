/**
 * The kubelets' static pods: what each node's manifest directory says, what runs, and the mirror pods in
 * the API that show it. A changed manifest stops the pod (mirror Ready=False) and, after
 * latencies.staticPodRestart, replaces its mirror pod with one for the new spec (delete + create, a new
 * uid, as the kubelet does when the config hash changes); a removed or unreadable manifest stops the pod
 * and deletes its mirror (the file source's periodic list no longer contains it, file.go extractFromDir);
 * a pod whose binary refuses its flags crash-loops with a growing restartCount.
 *
 * Containers outlive the kubelet (they belong to the container runtime): while a kubelet is down its pods
 * keep their state, nothing new happens to them, and it all resumes when the kubelet is back.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { hostPath, type TwinContext } from '../context.ts';
import type { KubeObject } from '../store.ts';
import { readCommandLine } from './command-line.ts';
import { type ContainersView, nowISO, podStatus } from './pod-status.ts';
import {
  CONFIG_MIRROR,
  containerComponent,
  isManifestName,
  parseStaticPod,
  type StaticPod,
} from './static-pods.ts';
import type { Timers } from './timers.ts';

type Phase = 'pending' | 'running' | 'crashloop' | 'stopping';

/** One manifest file's pod on one node. */
interface Slot {
  readonly file: string;
  /** What the manifest asks for now; undefined once the file is gone or unreadable. */
  want: StaticPod | undefined;
  /** What runs (or is being stopped): its mirror pod stands for it. */
  running: StaticPod;
  phase: Phase;
  restartCount: number;
  startedAt: string;
  mirrorUid: string | undefined;
  /** Bumped whenever pending timers of this slot must no longer act. */
  gen: number;
  armed: boolean;
}

/** What the runner needs to know of a node's kubelet. */
export interface StaticPodHost {
  readonly node: string;
  readonly ip: string;
  /** Whether the kubelet process runs. */
  readonly up: boolean;
  /** Absolute host path of the static pod directory, '' for none. */
  readonly staticPodPath: string;
}

interface Seen {
  readonly stamp: string;
  readonly pod: StaticPod | undefined;
  /** For a file that stopped parsing: the pod it held, kept until the next check finds it still broken. */
  lastGood: StaticPod | undefined;
}

interface NodePods {
  readonly slots: Map<string, Slot>;
  /** Last seen stat of each manifest file and what it parsed to. */
  readonly seen: Map<string, Seen>;
}

/** Longest crash-loop back-off as a multiple of the first (the kubelet's 10 s → 5 min). */
const MAX_BACKOFF_FACTOR = 30;

export class StaticPodRunner {
  readonly #ctx: TwinContext;
  readonly #timers: Timers;
  readonly #minor: number;
  readonly #nodes = new Map<string, NodePods>();
  readonly #hosts = new Map<string, StaticPodHost>();
  /** Slots whose kube-apiserver is Running and Ready. */
  readonly #readyApiServers = new Set<Slot>();

  constructor(ctx: TwinContext, timers: Timers, minor: number) {
    this.#ctx = ctx;
    this.#timers = timers;
    this.#minor = minor;
  }

  apiServerReady(): boolean {
    return this.#readyApiServers.size > 0;
  }

  /**
   * This node's kube-apiserver: the port it serves on at the node's address, and whether it is Running and
   * Ready (only then does that address answer); undefined when the node runs none.
   */
  apiServerOn(node: string): { readonly port: number; readonly ready: boolean } | undefined {
    for (const slot of this.#nodes.get(node)?.slots.values() ?? []) {
      if (!slot.running.apiServer) continue;
      return { port: slot.running.securePort ?? 6443, ready: this.#readyApiServers.has(slot) };
    }
    return undefined;
  }

  /**
   * Why the kube-apiserver static pod of this node cannot run, when it crash-loops on its flags; undefined
   * when it runs, is starting, or the node has none.
   */
  apiServerProblem(node: string): string | undefined {
    for (const slot of this.#nodes.get(node)?.slots.values() ?? []) {
      if (slot.running.apiServer && slot.phase === 'crashloop') return slot.running.problem;
    }
    return undefined;
  }

  /**
   * Read a node's static pod directory and act on what changed. `initial`: the twin is starting an
   * existing cluster, whose static pods are already up (Ready at once, no start latency).
   */
  sync(host: StaticPodHost, initial = false): void {
    this.#hosts.set(host.node, host);
    if (!host.up) return;
    const pods = this.#podsOf(host.node);
    const wanted = this.#readManifests(host, pods);
    // Existing pods first, so that a pod name freed by one file is free when another file takes it.
    for (const slot of [...pods.slots.values()]) {
      slot.want = wanted.get(slot.file);
      this.#drive(host, slot);
    }
    for (const [file, pod] of wanted) {
      if (!pod || pods.slots.has(file)) continue;
      this.#add(host, pods, file, pod, initial);
      this.#drive(host, pods.slots.get(file) as Slot);
    }
  }

  /** The kubelet stopped: its pods' pending transitions wait for it. */
  pause(node: string): void {
    for (const slot of this.#nodes.get(node)?.slots.values() ?? []) {
      slot.gen++;
      slot.armed = false;
    }
  }

  /** Recreate a mirror pod someone deleted while its static pod runs (the kubelet keeps one per static pod). */
  mirrorDeleted(pod: KubeObject): void {
    const node = (pod.spec as { nodeName?: string } | undefined)?.nodeName ?? '';
    const host = this.#hosts.get(node);
    if (!host?.up) return;
    for (const slot of this.#nodes.get(node)?.slots.values() ?? []) {
      if (slot.mirrorUid !== undefined && slot.mirrorUid === pod.metadata.uid) {
        slot.mirrorUid = undefined;
        this.#timers.after(0, () => this.#ensureMirror(host, slot));
      }
    }
  }

  /** After a kubelet (re)start: mirror pods that went missing (their Node was deleted) come back. */
  ensureMirrors(host: StaticPodHost): void {
    for (const slot of this.#nodes.get(host.node)?.slots.values() ?? []) this.#ensureMirror(host, slot);
  }

  #podsOf(node: string): NodePods {
    let pods = this.#nodes.get(node);
    if (!pods) {
      pods = { slots: new Map(), seen: new Map() };
      this.#nodes.set(node, pods);
    }
    return pods;
  }

  /**
   * The manifests of a node by file, undefined for a file that is not a Pod. Only files whose stat
   * changed are read again. Two files naming the same pod: the first (by file name) wins, as the kubelet
   * drops the duplicate.
   */
  #readManifests(host: StaticPodHost, pods: NodePods): Map<string, StaticPod | undefined> {
    const wanted = new Map<string, StaticPod | undefined>();
    if (!host.staticPodPath) return wanted;
    const dir = hostPath(this.#ctx.stateDir, host.node, host.staticPodPath);
    let entries: string[];
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((e) => isManifestName(e.name) && (e.isFile() || e.isSymbolicLink()))
        .map((e) => e.name)
        .sort();
    } catch {
      entries = [];
    }
    const names = new Set<string>();
    const present = new Set<string>();
    for (const name of entries) {
      const file = path.posix.join(host.staticPodPath, name);
      const pod = this.#readManifest(host, pods, file, path.join(dir, name));
      present.add(file);
      if (pod && names.has(`${pod.namespace}/${pod.name}`)) continue;
      if (pod) names.add(`${pod.namespace}/${pod.name}`);
      wanted.set(file, pod);
    }
    for (const file of pods.seen.keys()) if (!present.has(file)) pods.seen.delete(file);
    return wanted;
  }

  #readManifest(host: StaticPodHost, pods: NodePods, file: string, local: string): StaticPod | undefined {
    let stamp: string;
    try {
      const st = statSync(local);
      if (!st.isFile()) return undefined;
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    } catch {
      return undefined;
    }
    const seen = pods.seen.get(file);
    if (seen?.stamp === stamp) {
      // Still unreadable one check later: dropped, as the file source's periodic list drops it.
      if (!seen.pod) seen.lastGood = undefined;
      return seen.pod;
    }
    let pod: StaticPod | undefined;
    try {
      pod = parseStaticPod(readFileSync(local, 'utf8'), file, host.node, this.#ctx.spec.kubernetesVersion);
      const crash = pod && this.#injectedCrash(host.node, pod);
      if (pod && crash) pod = { ...pod, problem: crash };
    } catch {
      pod = undefined;
    }
    // A file that just stopped parsing keeps its pod for now, as the kubelet's inotify path keeps it on a
    // decode error (watch_linux.go); a write caught half-way is so never taken for a removed pod.
    const lastGood = pod ? undefined : (seen?.pod ?? seen?.lastGood);
    pods.seen.set(file, { stamp, pod, lastGood });
    return pod ?? lastGood;
  }

  /** A crashWithoutFlag fault that applies to this pod's control-plane container, if any. */
  #injectedCrash(node: string, pod: StaticPod): string | undefined {
    const containers = (
      pod.mirror.spec as { containers?: { name: string; command?: string[]; args?: string[] }[] }
    ).containers;
    for (const c of containers ?? []) {
      const component = containerComponent(c);
      const crash =
        component &&
        this.#ctx.faults.crashWithout(
          node,
          component,
          readCommandLine([...(c.command ?? []), ...(c.args ?? [])]).flags,
        );
      if (crash) return crash;
    }
    return undefined;
  }

  #add(host: StaticPodHost, pods: NodePods, file: string, pod: StaticPod, initial: boolean): void {
    const slot: Slot = {
      file,
      want: pod,
      running: pod,
      phase: 'pending',
      restartCount: 0,
      startedAt: nowISO(),
      mirrorUid: undefined,
      gen: 0,
      armed: false,
    };
    pods.slots.set(file, slot);
    if (initial) this.#startContainers(slot);
    this.#ensureMirror(host, slot);
  }

  /** Move a slot towards what its manifest wants, arming the timer of its next step. */
  #drive(host: StaticPodHost, slot: Slot): void {
    if (!host.up) return;
    if (slot.want === undefined) {
      this.#remove(host, slot);
      return;
    }
    if (slot.phase !== 'stopping' && slot.want.hash !== slot.running.hash) {
      slot.gen++;
      slot.armed = false;
      this.#setPhase(slot, 'stopping');
      this.#writeStatus(host, slot);
    }
    if (slot.armed || slot.phase === 'running') return;
    slot.armed = true;
    const gen = slot.gen;
    const restart = this.#ctx.spec.latencies.staticPodRestart;
    const delay =
      slot.phase === 'crashloop'
        ? Math.max(restart, 10) * Math.min(2 ** (slot.restartCount - 1), MAX_BACKOFF_FACTOR)
        : restart;
    this.#timers.after(delay, () => {
      if (slot.gen !== gen || !host.up) return;
      slot.armed = false;
      this.#step(host, slot);
    });
  }

  /** The timed step of a slot: start its containers, replace its pod, or restart a crashed container. */
  #step(host: StaticPodHost, slot: Slot): void {
    if (slot.phase === 'stopping') {
      const next = slot.want;
      this.#deleteMirror(slot);
      if (!next) {
        this.#forget(host, slot);
        return;
      }
      slot.running = next;
      slot.restartCount = 0;
      slot.startedAt = nowISO();
      this.#startContainers(slot);
      this.#ensureMirror(host, slot);
    } else if (slot.phase === 'pending') {
      this.#startContainers(slot);
      this.#writeStatus(host, slot);
    } else if (slot.phase === 'crashloop') {
      slot.restartCount++;
      this.#writeStatus(host, slot);
    }
    this.#drive(host, slot);
  }

  #startContainers(slot: Slot): void {
    if (slot.running.problem) {
      slot.restartCount = Math.max(slot.restartCount, 1);
      this.#setPhase(slot, 'crashloop');
    } else {
      this.#setPhase(slot, 'running');
    }
  }

  #setPhase(slot: Slot, phase: Phase): void {
    slot.phase = phase;
    if (phase === 'running' && slot.running.apiServer) this.#readyApiServers.add(slot);
    else this.#readyApiServers.delete(slot);
  }

  #remove(host: StaticPodHost, slot: Slot): void {
    slot.gen++;
    this.#setPhase(slot, 'stopping');
    this.#deleteMirror(slot);
    this.#forget(host, slot);
  }

  #forget(host: StaticPodHost, slot: Slot): void {
    this.#readyApiServers.delete(slot);
    this.#nodes.get(host.node)?.slots.delete(slot.file);
  }

  #containers(slot: Slot): ContainersView {
    const at = slot.startedAt;
    switch (slot.phase) {
      case 'pending':
        return { state: { waiting: { reason: 'ContainerCreating' } }, restartCount: 0, ready: false };
      case 'running':
        return { state: { running: { startedAt: at } }, restartCount: slot.restartCount, ready: true };
      case 'stopping':
        return {
          state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at, finishedAt: nowISO() } },
          restartCount: slot.restartCount,
          ready: false,
        };
      case 'crashloop': {
        const mirror = slot.running.mirror;
        const container = (mirror.spec as { containers: { name: string }[] }).containers[0]?.name ?? '';
        const backoff = Math.round(10 * Math.min(2 ** (slot.restartCount - 1), MAX_BACKOFF_FACTOR));
        const seconds = backoff >= 60 ? `${Math.floor(backoff / 60)}m${backoff % 60}s` : `${backoff}s`;
        const now = nowISO();
        return {
          state: {
            waiting: {
              reason: 'CrashLoopBackOff',
              message: `back-off ${seconds} restarting failed container=${container} pod=${mirror.metadata.name}_${mirror.metadata.namespace}(${slot.running.hash})`,
            },
          },
          lastState: {
            terminated: {
              exitCode: 1,
              reason: 'Error',
              message: slot.running.problem ?? '',
              startedAt: now,
              finishedAt: now,
            },
          },
          restartCount: slot.restartCount,
          ready: false,
        };
      }
    }
  }

  #status(host: StaticPodHost, slot: Slot, mirror: KubeObject): Record<string, unknown> {
    return podStatus(mirror, {
      phase: slot.phase === 'pending' ? 'Pending' : 'Running',
      hostIP: host.ip,
      podIP: host.ip,
      startTime: slot.startedAt,
      containers: this.#containers(slot),
      minor: this.#minor,
    });
  }

  /** Create the mirror pod of a slot if it has none (and its Node exists: the mirror is owned by it). */
  #ensureMirror(host: StaticPodHost, slot: Slot): void {
    const store = this.#ctx.store;
    const { namespace, name } = slot.running;
    const existing = store.tryGet('pods', namespace, name);
    if (existing && existing.metadata.uid === slot.mirrorUid) return;
    const node = store.tryGet('nodes', undefined, host.node);
    if (!node || existing || !store.tryGet('namespaces', undefined, namespace)) return;
    const mirror = structuredClone(slot.running.mirror);
    mirror.metadata.ownerReferences = [
      { apiVersion: 'v1', kind: 'Node', name: host.node, uid: node.metadata.uid ?? '', controller: true },
    ];
    const created = store.create('pods', mirror);
    slot.mirrorUid = created.metadata.uid;
    this.#writeStatus(host, slot);
  }

  #writeStatus(host: StaticPodHost, slot: Slot): void {
    const { namespace, name } = slot.running;
    const mirror = this.#ctx.store.tryGet('pods', namespace, name);
    if (!mirror || mirror.metadata.uid !== slot.mirrorUid) return;
    const next = structuredClone(mirror);
    next.status = this.#status(host, slot, mirror);
    this.#ctx.store.update('pods', next, { subresource: 'status' });
  }

  #deleteMirror(slot: Slot): void {
    const uid = slot.mirrorUid;
    slot.mirrorUid = undefined;
    const { namespace, name } = slot.running;
    const mirror = this.#ctx.store.tryGet('pods', namespace, name);
    if (uid && mirror?.metadata.uid === uid && mirror.metadata.annotations?.[CONFIG_MIRROR]) {
      // As the kubelet's DeleteMirrorPod: at once (grace 0) and only the mirror it made (uid precondition).
      this.#ctx.store.delete('pods', namespace, name, { gracePeriodSeconds: 0, preconditions: { uid } });
    }
  }
}
