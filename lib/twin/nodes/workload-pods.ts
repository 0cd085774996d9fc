/**
 * Pods bound to a node (spec.nodeName set by the scheduler, a DaemonSet or a Job, not mirror pods), run by
 * that node's kubelet: Running and Ready after latencies.podStart; pods that do not restart (Job pods)
 * then complete with exit code 0. Node agent pods (label app.kubernetes.io/name=ccm-migrate-agent) run
 * the agent in-process against the node's directory after latencies.jobStart (and agentImagePull on a node
 * that has not pulled the agent image yet) and report its result through the container's termination
 * message, as the real agent container does, unless their container does not start or its launcher
 * refuses (agent-container.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { withRestartedKubelet } from '../../agent/ops/report.ts';
import {
  AGENT_NAME,
  AGENT_REQUEST_ENV,
  type AgentResult,
  TERMINATION_MESSAGE_LIMIT,
} from '../../agent/protocol.ts';
import { fitResult, runAgent } from '../../agent/run.ts';
import { nodeRoot, type TwinContext } from '../context.ts';
import type { KubeObject } from '../store.ts';
import { agentContainerStart, awaitAgentGo } from './agent-container.ts';
import { pullRefusal } from './image-pulls.ts';
import { type ContainerState, type ContainersView, nowISO, podStatus } from './pod-status.ts';
import { CONFIG_MIRROR } from './static-pods.ts';
import type { Timers } from './timers.ts';

/** What the pod runner needs of a node's kubelet. */
export interface PodHost {
  readonly node: string;
  readonly ip: string;
  /** Position of the node in the cluster: picks its pod IP range. */
  readonly index: number;
  /** What the host calls itself: the node agent reads it as the kubelet would. */
  readonly hostname: string;
  /** The kubelet's command line as it last started (what the host's /proc shows). */
  readonly kubeletArgv: readonly string[];
  /** The command line a restart would start it with, from its files as they are now. */
  readonly restartedKubeletArgv: () => readonly string[];
  /** Its flags as it last started, the config file's feature gates merged in. */
  readonly kubeletFlags: ReadonlyMap<string, string>;
  readonly up: boolean;
}

interface PodSpec {
  nodeName?: string;
  restartPolicy?: string;
  hostNetwork?: boolean;
  containers?: { name: string; image?: string; env?: { name: string; value?: string }[] }[];
}

/** The kubelet's image pull back-off: 10 s, doubling, at most 5 min (pkg/kubelet/kubelet.go, backOffPeriod). */
const PULL_BACKOFF_MS = 10_000;
const PULL_BACKOFF_MAX_MS = 300_000;

function specOf(pod: KubeObject): PodSpec {
  return (pod.spec ?? {}) as PodSpec;
}

function keyOf(pod: KubeObject): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** Whether this node's kubelet should run the pod (bound here, not a mirror pod, not finished or going). */
function runnable(pod: KubeObject): boolean {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return (
    !!specOf(pod).nodeName &&
    !pod.metadata.annotations?.[CONFIG_MIRROR] &&
    !pod.metadata.deletionTimestamp &&
    phase !== 'Succeeded' &&
    phase !== 'Failed'
  );
}

/** Deleted, and waiting for its kubelet to stop it (a real server's graceful deletion of a bound pod). */
function inGracePeriod(pod: KubeObject): boolean {
  return !!pod.metadata.deletionTimestamp && (pod.metadata.deletionGracePeriodSeconds ?? 0) > 0;
}

/** Cut a termination message to the kubelet's limit in bytes, never inside a UTF-8 character. */
export function truncateMessage(text: string, limit = TERMINATION_MESSAGE_LIMIT): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= limit) return text;
  let end = limit;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString();
}

export class WorkloadPodRunner {
  readonly #ctx: TwinContext;
  readonly #timers: Timers;
  readonly #minor: number;
  readonly #hosts: (node: string) => PodHost | undefined;
  readonly #restartKubelet: (node: string) => Promise<void>;
  readonly #filesWritten: (node: string) => void;
  /** Pods this runner has taken on, by namespace/name, with the uid it took on. */
  readonly #taken = new Map<string, string>();
  /** Pods bound to a node whose kubelet is down, by node. */
  readonly #waiting = new Map<string, Set<string>>();
  /** Pods being deleted on a node whose kubelet is down, by node: namespace/name → uid. */
  readonly #deleting = new Map<string, Map<string, string>>();
  /** Pod IPs handed out per node. */
  readonly #ipCounters = new Map<string, number>();

  constructor(opts: {
    ctx: TwinContext;
    timers: Timers;
    minor: number;
    host: (node: string) => PodHost | undefined;
    restartKubelet: (node: string) => Promise<void>;
    /** The agent wrote the node's files: what inotify tells the kubelet's file source. */
    filesWritten: (node: string) => void;
  }) {
    this.#ctx = opts.ctx;
    this.#timers = opts.timers;
    this.#minor = opts.minor;
    this.#hosts = opts.host;
    this.#restartKubelet = opts.restartKubelet;
    this.#filesWritten = opts.filesWritten;
  }

  /** A pod was created, changed or deleted. */
  observe(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: KubeObject): void {
    const key = keyOf(pod);
    if (type === 'DELETED') {
      if (this.#taken.get(key) === pod.metadata.uid) this.#taken.delete(key);
      return;
    }
    if (inGracePeriod(pod)) {
      const host = this.#hosts(specOf(pod).nodeName ?? '');
      if (host) this.#confirmDeletion(host, key, pod.metadata.uid ?? '');
      return;
    }
    if (this.#taken.get(key) === pod.metadata.uid || !runnable(pod)) return;
    const host = this.#hosts(specOf(pod).nodeName as string);
    if (!host) return;
    this.#taken.set(key, pod.metadata.uid ?? '');
    this.#schedule(host, key);
  }

  /** A kubelet came back: it starts the pods bound to its node meanwhile, and ends the deleted ones. */
  resume(host: PodHost): void {
    const waiting = this.#waiting.get(host.node);
    if (waiting) {
      this.#waiting.delete(host.node);
      for (const key of waiting) this.#schedule(host, key);
    }
    const deleting = this.#deleting.get(host.node);
    if (deleting) {
      this.#deleting.delete(host.node);
      for (const [key, uid] of deleting) this.#confirmDeletion(host, key, uid);
    }
  }

  /**
   * A pod deleted with a grace period stays (Terminating) until its node's kubelet has stopped it and
   * deletes it for good (grace 0, this uid only), as the kubelet's status manager does; while the kubelet
   * is down, it waits.
   */
  #confirmDeletion(host: PodHost, key: string, uid: string): void {
    if (!host.up) {
      const pending = this.#deleting.get(host.node) ?? new Map<string, string>();
      this.#deleting.set(host.node, pending);
      pending.set(key, uid);
      return;
    }
    this.#timers.after(0, () => {
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.#ctx.store.tryGet('pods', ns, name);
      if (!pod || pod.metadata.uid !== uid || !inGracePeriod(pod)) return;
      if (!host.up) {
        this.#confirmDeletion(host, key, uid);
        return;
      }
      this.#ctx.store.delete('pods', ns, name, { gracePeriodSeconds: 0, preconditions: { uid } });
    });
  }

  /** Why the node cannot pull one of the pod's images (image-pulls.ts), if it cannot. */
  #pullRefusal(pod: KubeObject, host: PodHost): string | undefined {
    const root = nodeRoot(this.#ctx.stateDir, host.node);
    const onHost = (file: string) => path.join(root, file);
    const kubelet = {
      provider: this.#ctx.spec.cloud.provider,
      minor: this.#minor,
      flags: host.kubeletFlags,
      host: {
        read: (file: string) => (existsSync(onHost(file)) ? readFileSync(onHost(file), 'utf8') : undefined),
        exists: (file: string) => existsSync(onHost(file)),
      },
    };
    for (const c of specOf(pod).containers ?? []) {
      const refused = pullRefusal(c.image ?? '', kubelet);
      if (refused) return refused;
    }
    return undefined;
  }

  /** The pod's images that the node's status.images does not list yet: the kubelet pulls them first. */
  #imagesToPull(host: PodHost, pod: KubeObject): string[] {
    const node = this.#ctx.store.tryGet('nodes', undefined, host.node);
    const status = (node?.status ?? {}) as { images?: { names: string[] }[] };
    const held = new Set((status.images ?? []).flatMap((i) => i.names));
    return (specOf(pod).containers ?? [])
      .map((c) => c.image ?? '')
      .filter((image) => image !== '' && !held.has(image));
  }

  /**
   * From the pod's turn to its container running: a pod start, an agent pod's own (jobStart), and the
   * agent image's pull on a node that has not pulled it yet (other images are taken as present).
   */
  #startDelay(host: PodHost, pod: KubeObject, agent: boolean): number {
    const { latencies } = this.#ctx.spec;
    if (!agent) return latencies.podStart;
    return latencies.jobStart + (this.#imagesToPull(host, pod).length > 0 ? latencies.agentImagePull : 0);
  }

  /** The images the kubelet now holds, on its Node's status.images (as it reports them, tag and digest). */
  #recordImages(host: PodHost, pod: KubeObject): void {
    const node = this.#ctx.store.tryGet('nodes', undefined, host.node);
    if (!node) return;
    const status = (node.status ?? {}) as { images?: { names: string[]; sizeBytes: number }[] };
    const fresh = this.#imagesToPull(host, pod);
    if (fresh.length === 0) return;
    const next = structuredClone(node);
    const images = [...(status.images ?? []), ...fresh.map((image) => ({ names: [image], sizeBytes: 0 }))];
    next.status = { ...status, images };
    this.#ctx.store.update('nodes', next, { subresource: 'status' });
  }

  #schedule(host: PodHost, key: string, pulls = 0): void {
    if (!host.up) {
      let set = this.#waiting.get(host.node);
      if (!set) {
        set = new Set();
        this.#waiting.set(host.node, set);
      }
      set.add(key);
      return;
    }
    const uid = this.#taken.get(key);
    const current = (): KubeObject | undefined => {
      const [ns, name] = key.split('/') as [string, string];
      const pod = this.#ctx.store.tryGet('pods', ns, name);
      return pod && pod.metadata.uid === uid && runnable(pod) ? pod : undefined;
    };
    const pod = current();
    if (!pod) return;
    const agent = pod.metadata.labels?.['app.kubernetes.io/name'] === AGENT_NAME;
    const { latencies } = this.#ctx.spec;
    this.#timers.after(this.#startDelay(host, pod, agent), () => {
      const now = current();
      if (!now) return;
      if (!host.up) {
        this.#schedule(host, key);
        return;
      }
      const startedAt = nowISO();
      const podIP = specOf(now).hostNetwork ? host.ip : this.#podIP(host);
      const refused = this.#pullRefusal(now, host);
      if (refused) {
        this.#write(now, host, podIP, startedAt, 'Pending', {
          state: { waiting: { reason: pulls > 0 ? 'ImagePullBackOff' : 'ErrImagePull', message: refused } },
          restartCount: 0,
          ready: false,
        });
        const backoff = Math.min(PULL_BACKOFF_MS * 2 ** pulls, PULL_BACKOFF_MAX_MS);
        this.#timers.after(backoff, () => this.#schedule(host, key, pulls + 1));
        return;
      }
      this.#recordImages(host, now);
      const running = this.#write(now, host, podIP, startedAt, 'Running', {
        state: { running: { startedAt } },
        restartCount: 0,
        ready: true,
      });
      if (agent) void this.#runAgent(running, host, podIP, startedAt, current);
      else if (specOf(now).restartPolicy === 'Never' || specOf(now).restartPolicy === 'OnFailure') {
        this.#timers.after(latencies.podStart, () => {
          const done = current();
          if (done) this.#finish(done, host, podIP, startedAt, 0, 'Completed');
        });
      }
    });
  }

  /** Run the agent with the request in its container's environment; its result is the termination message. */
  async #runAgent(
    pod: KubeObject,
    host: PodHost,
    podIP: string,
    startedAt: string,
    current: () => KubeObject | undefined,
  ): Promise<void> {
    const launched = agentContainerStart(this.#ctx, pod);
    const start =
      launched.kind === 'run' ? await awaitAgentGo(this.#ctx, pod, () => current() === undefined) : launched;
    if (start === undefined) return;
    if (start.kind === 'not-started') {
      this.#finish(pod, host, podIP, startedAt, 128, 'StartError', start.message);
      return;
    }
    if (start.kind === 'refused') {
      this.#finish(pod, host, podIP, startedAt, 1, 'Error', JSON.stringify(start.answer));
      return;
    }
    const env = specOf(pod).containers?.flatMap((c) => c.env ?? []) ?? [];
    const raw = env.find((e) => e.name === AGENT_REQUEST_ENV)?.value;
    let result: AgentResult | undefined;
    let message: string;
    try {
      result = await runAgent(raw === undefined ? undefined : JSON.parse(raw), {
        hostRoot: nodeRoot(this.#ctx.stateDir, host.node),
        hostname: async () => host.hostname,
        kubeletCommandLine: async () => host.kubeletArgv,
      });
      // As the agent's entry point does once it restarted the kubelet (lib/agent/main.ts): the answer
      // says what the restarted process runs, which the twin's kubelet reads from these files when it starts.
      if (result.restartKubelet)
        result = fitResult(withRestartedKubelet(result, host.restartedKubeletArgv()));
      message = JSON.stringify(result);
    } catch (err) {
      message = `agent failed: ${(err as Error).message}`;
    }
    if (this.#ctx.signal.aborted) return;
    if (result?.changed) this.#filesWritten(host.node);
    const done = current();
    if (!done) return;
    const ok = result?.ok === true;
    this.#finish(
      done,
      host,
      podIP,
      startedAt,
      ok ? 0 : 1,
      ok ? 'Completed' : 'Error',
      truncateMessage(message),
    );
    if (result?.restartKubelet) await this.#restartKubelet(host.node);
  }

  #finish(
    pod: KubeObject,
    host: PodHost,
    podIP: string,
    startedAt: string,
    exitCode: number,
    reason: string,
    message?: string,
  ): void {
    const state: ContainerState = {
      terminated: {
        exitCode,
        reason,
        ...(message !== undefined ? { message } : {}),
        startedAt,
        finishedAt: nowISO(),
      },
    };
    this.#write(pod, host, podIP, startedAt, exitCode === 0 ? 'Succeeded' : 'Failed', {
      state,
      restartCount: 0,
      ready: false,
    });
  }

  #write(
    pod: KubeObject,
    host: PodHost,
    podIP: string,
    startTime: string,
    phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed',
    containers: ContainersView,
  ): KubeObject {
    const next = structuredClone(pod);
    next.status = podStatus(pod, {
      phase,
      hostIP: host.ip,
      podIP,
      startTime,
      containers,
      minor: this.#minor,
    });
    return this.#ctx.store.update('pods', next, { subresource: 'status' });
  }

  /** A pod IP from the node's own range (as a CNI allocates from the node's podCIDR). */
  #podIP(host: PodHost): string {
    const n = (this.#ipCounters.get(host.node) ?? 0) + 1;
    this.#ipCounters.set(host.node, n);
    return `10.${128 + ((host.index >> 8) & 127)}.${host.index & 255}.${(n % 253) + 1}`;
  }
}
