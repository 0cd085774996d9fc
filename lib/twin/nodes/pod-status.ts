/**
 * Pod status as the kubelet writes it (pkg/kubelet/status/generate.go, kubelet_pods.go
 * generateAPIPodStatus): phase, the PodScheduled/Initialized/ContainersReady/Ready conditions (and
 * PodReadyToStartContainers from 1.29, where it is on by default), hostIP(s), podIP(s), startTime,
 * qosClass and one containerStatus per container.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../store.ts';

export type ContainerState =
  | { readonly waiting: { readonly reason: string; readonly message?: string } }
  | { readonly running: { readonly startedAt: string } }
  | {
      readonly terminated: {
        readonly exitCode: number;
        readonly reason: string;
        readonly message?: string;
        readonly startedAt: string;
        readonly finishedAt: string;
      };
    };

/** What every container of the pod is doing (the twin runs a pod's containers in step). */
export interface ContainersView {
  readonly state: ContainerState;
  readonly lastState?: ContainerState;
  readonly restartCount: number;
  readonly ready: boolean;
}

export interface PodStatusInput {
  readonly phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  readonly hostIP: string;
  /** Absent while the sandbox is not up. */
  readonly podIP?: string;
  readonly startTime: string;
  readonly containers: ContainersView;
  /** Minor of the cluster version (which conditions exist). */
  readonly minor: number;
}

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
  message?: string;
  lastProbeTime: null;
  lastTransitionTime: string;
}

interface Container {
  name: string;
  image?: string;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

export function nowISO(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function containersOf(pod: KubeObject): Container[] {
  return ((pod.spec as { containers?: Container[] } | undefined)?.containers ?? []) as Container[];
}

/** QoS class (pkg/apis/core/v1/helper/qos): no requests or limits → BestEffort; limits = requests for cpu and memory everywhere → Guaranteed. */
export function qosClass(pod: KubeObject): 'BestEffort' | 'Burstable' | 'Guaranteed' {
  const containers = containersOf(pod);
  const any = containers.some(
    (c) =>
      Object.keys(c.resources?.requests ?? {}).length + Object.keys(c.resources?.limits ?? {}).length > 0,
  );
  if (!any) return 'BestEffort';
  const guaranteed = containers.every((c) =>
    ['cpu', 'memory'].every((r) => {
      const limit = c.resources?.limits?.[r];
      const request = c.resources?.requests?.[r] ?? limit;
      return limit !== undefined && limit === request;
    }),
  );
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function imageRef(image: string): { image: string; imageID: string } {
  const repo = image.replace(/:[^/:@]+$/, '').replace(/@.*$/, '');
  return { image, imageID: `${repo}@sha256:${sha256(image)}` };
}

/**
 * The conditions, keeping each one's lastTransitionTime when its status did not change (as the kubelet's
 * status manager does).
 */
function conditions(pod: KubeObject, input: PodStatusInput, now: string): Condition[] {
  const previous = new Map(
    (((pod.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[]).map((c) => [
      c.type,
      c,
    ]),
  );
  const make = (type: string, ok: boolean, reason?: string, message?: string): Condition => {
    const before = previous.get(type);
    const status = ok ? 'True' : 'False';
    return {
      type,
      status,
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
      lastProbeTime: null,
      lastTransitionTime: before?.status === status ? before.lastTransitionTime : now,
    };
  };
  const names = containersOf(pod).map((c) => c.name);
  const completed = input.phase === 'Succeeded';
  const ready = input.containers.ready && !completed && input.phase === 'Running';
  const notReady = completed
    ? (['PodCompleted', undefined] as const)
    : (['ContainersNotReady', `containers with unready status: [${names.join(' ')}]`] as const);
  const sandbox = input.podIP !== undefined && input.phase !== 'Succeeded' && input.phase !== 'Failed';
  return [
    ...(input.minor >= 29 ? [make('PodReadyToStartContainers', sandbox)] : []),
    make('Initialized', true, completed ? 'PodCompleted' : undefined),
    make('Ready', ready, ...(ready ? [] : notReady)),
    make('ContainersReady', ready, ...(ready ? [] : notReady)),
    make('PodScheduled', true),
  ];
}

/** The status of a pod the kubelet runs, for a store.update(…, { subresource: 'status' }). */
export function podStatus(pod: KubeObject, input: PodStatusInput): Record<string, unknown> {
  const now = nowISO();
  const uid = pod.metadata.uid ?? pod.metadata.name;
  const { state, lastState, restartCount, ready } = input.containers;
  const started = 'running' in state;
  return {
    phase: input.phase,
    conditions: conditions(pod, input, now),
    hostIP: input.hostIP,
    // status.hostIPs is in the API from 1.28 and set by kubelets from 1.29 (PodHostIPs on by default);
    // an older API server drops it as an unknown field.
    ...(input.minor >= 29 ? { hostIPs: [{ ip: input.hostIP }] } : {}),
    ...(input.podIP ? { podIP: input.podIP, podIPs: [{ ip: input.podIP }] } : {}),
    startTime: input.startTime,
    qosClass: qosClass(pod),
    containerStatuses: containersOf(pod).map((c) => {
      const ran = !('waiting' in state) || lastState !== undefined;
      return {
        name: c.name,
        ...imageRef(c.image ?? ''),
        ...(ran ? { containerID: `containerd://${sha256(`${uid}/${c.name}/${restartCount}`)}` } : {}),
        ready,
        started,
        restartCount,
        state,
        lastState: lastState ?? {},
      };
    }),
  };
}
