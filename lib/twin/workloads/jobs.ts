/**
 * The Job controller (pkg/controller/job) with finalizer-based tracking: each pod it creates carries
 * `batch.kubernetes.io/job-tracking`; once a pod has finished (or is being deleted) it is counted into
 * status.succeeded/failed and the finalizer comes off, so a pod is counted exactly once even after it is
 * gone. Pods run `parallelism` at a time up to `completions`; more than `backoffLimit` failures, or
 * running past `activeDeadlineSeconds`, fail the Job and delete its active pods. The TTL-after-finished
 * controller deletes a finished Job with `ttlSecondsAfterFinished`, its pods with it.
 * Pod status (phase, the container's terminated state and termination message) is the kubelet's and is
 * never written here. Not modelled: suspend, Indexed completion, podFailurePolicy, restart backoff delay,
 * counting container restarts of restartPolicy OnFailure.
 */
import type { TwinContext } from '../context.ts';
import type { KubeObject, StoreEvent } from '../store.ts';
import type { WorkloadCache } from './cache.ts';
import type { EventRecorder } from './events.ts';
import {
  controllerRef,
  deletionOrder,
  generateNameFrom,
  isPodActive,
  isPodReady,
  keyOf,
  kubernetesMinor,
  rfc3339,
  splitKey,
} from './objects.ts';
import { PodControl } from './pod-control.ts';
import { WorkQueue } from './queue.ts';
import { type Condition, JOBS, PODS, type Pod, type PodTemplateSpec } from './types.ts';

const COMPONENT = 'job-controller';
export const JOB_TRACKING_FINALIZER = 'batch.kubernetes.io/job-tracking';
const ORPHAN_PREFIX = 'pod:';
/** The API server's default for spec.backoffLimit. */
const DEFAULT_BACKOFF_LIMIT = 6;

interface Job extends KubeObject {
  readonly spec: {
    readonly parallelism?: number;
    readonly completions?: number;
    readonly backoffLimit?: number;
    readonly activeDeadlineSeconds?: number;
    readonly ttlSecondsAfterFinished?: number;
    readonly template: PodTemplateSpec;
  };
  readonly status?: {
    readonly startTime?: string;
    readonly completionTime?: string;
    readonly succeeded?: number;
    readonly failed?: number;
    readonly conditions?: readonly Condition[];
  };
}

type Failure = { reason: 'BackoffLimitExceeded' | 'DeadlineExceeded'; message: string };

const BACKOFF_LIMIT_EXCEEDED: Failure = {
  reason: 'BackoffLimitExceeded',
  message: 'Job has reached the specified backoff limit',
};
const DEADLINE_EXCEEDED: Failure = {
  reason: 'DeadlineExceeded',
  message: 'Job was active longer than specified deadline',
};

function hasTrackingFinalizer(pod: Pod): boolean {
  return pod.metadata.finalizers?.includes(JOB_TRACKING_FINALIZER) ?? false;
}

function finishedCondition(job: Job): Condition | undefined {
  return job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

function jobRef(pod: KubeObject | undefined): { name: string; uid: string } | undefined {
  return pod?.metadata.ownerReferences?.find(
    (r) => r.controller && r.kind === 'Job' && r.apiVersion === 'batch/v1',
  );
}

export class JobController {
  readonly #ctx: TwinContext;
  readonly #cache: WorkloadCache;
  readonly #events: EventRecorder;
  readonly #pods: PodControl;
  readonly #queue: WorkQueue;
  /**
   * From v1.31 the controller first adds SuccessCriteriaMet/FailureTarget, then Complete/Failed
   * (delayTerminalCondition: JobManagedBy or JobPodReplacementPolicy enabled).
   */
  readonly #interimConditions: boolean;
  /** From v1.33 (JobSuccessPolicy GA) success conditions carry reason CompletionsReached. */
  readonly #completionsReachedReason: boolean;

  constructor(ctx: TwinContext, cache: WorkloadCache, events: EventRecorder) {
    this.#ctx = ctx;
    this.#cache = cache;
    this.#events = events;
    this.#pods = new PodControl(ctx.store, COMPONENT, events);
    this.#queue = new WorkQueue(COMPONENT, (key) => this.#sync(key), { minIntervalMs: 5 });
    const minor = kubernetesMinor(ctx.spec.kubernetesVersion);
    this.#interimConditions = minor >= 31;
    this.#completionsReachedReason = minor >= 33;
  }

  start(): void {
    for (const job of this.#ctx.store.list(JOBS).items) this.#queue.add(keyOf(job));
    for (const [key, pod] of this.#cache.pods)
      if (hasTrackingFinalizer(pod)) this.#queue.add(ORPHAN_PREFIX + key);
  }

  stop(): void {
    this.#queue.stop();
  }

  observe(event: StoreEvent, previous: KubeObject | undefined): void {
    if (event.key === JOBS) {
      if (event.type === 'DELETED') this.#queue.forget(keyOf(event.object));
      else this.#queue.add(keyOf(event.object));
    } else if (event.key === PODS) {
      for (const pod of [event.object, previous]) {
        const ref = jobRef(pod);
        if (ref) this.#queue.add(`${pod?.metadata.namespace}/${ref.name}`);
      }
      const pod = event.object as Pod;
      if (event.type !== 'DELETED' && hasTrackingFinalizer(pod)) this.#queue.add(ORPHAN_PREFIX + keyOf(pod));
    }
  }

  #sync(key: string): void {
    if (key.startsWith(ORPHAN_PREFIX)) {
      this.#releaseIfOrphan(key.slice(ORPHAN_PREFIX.length));
      return;
    }
    const { namespace, name } = splitKey(key);
    const job = this.#ctx.store.tryGet(JOBS, namespace, name) as Job | undefined;
    if (!job) return;
    if (job.metadata.deletionTimestamp) {
      for (const pod of this.#cache.podsOf(job.metadata.uid)) this.#releaseFinalizer(pod);
      return;
    }
    const finished = finishedCondition(job);
    if (finished) this.#syncFinished(job, finished);
    else this.#syncRunning(job);
  }

  /** A pod whose Job is gone (or is another Job by now) keeps no finalizer of ours (the orphan handling). */
  #releaseIfOrphan(podKey: string): void {
    const pod = this.#cache.pods.get(podKey);
    if (!pod || !hasTrackingFinalizer(pod)) return;
    const ref = jobRef(pod);
    const job = ref ? this.#ctx.store.tryGet(JOBS, pod.metadata.namespace, ref.name) : undefined;
    if (job && job.metadata.uid === ref?.uid && !job.metadata.deletionTimestamp) return;
    this.#releaseFinalizer(pod);
  }

  #syncRunning(job: Job): void {
    const now = Date.now();
    const { spec } = job;
    const startTime = job.status?.startTime ?? rfc3339(now);
    // Defaulting: neither set means one pod to run once.
    const completions = spec.completions ?? (spec.parallelism === undefined ? 1 : undefined);
    const parallelism = spec.parallelism ?? 1;
    const before = this.#count(job);
    let failure: Failure | undefined;
    if (before.failed > (spec.backoffLimit ?? DEFAULT_BACKOFF_LIMIT)) failure = BACKOFF_LIMIT_EXCEEDED;
    const deadlineAt =
      spec.activeDeadlineSeconds === undefined
        ? Infinity
        : Date.parse(startTime) + spec.activeDeadlineSeconds * 1000;
    if (!failure && now >= deadlineAt) failure = DEADLINE_EXCEEDED;
    const active = this.#cache.podsOf(job.metadata.uid).filter(isPodActive);
    const complete =
      !failure &&
      (completions !== undefined
        ? before.succeeded >= completions
        : before.succeeded > 0 && active.length === 0);

    if (failure || complete) {
      for (const pod of active) this.#pods.delete(job, pod);
    } else {
      // With no completion count, once one pod succeeded no new ones start (the rest finish on their own).
      const wantActive =
        completions !== undefined
          ? Math.min(completions - before.succeeded, parallelism)
          : before.succeeded > 0
            ? active.length
            : parallelism;
      if (active.length < wantActive) {
        for (let i = active.length; i < wantActive; i++) this.#pods.create(job, this.#newPod(job));
      } else if (active.length > wantActive) {
        const extra = [...active].sort(deletionOrder((p) => this.#cache.seenOrder(p)));
        for (const pod of extra.slice(0, active.length - wantActive)) this.#pods.delete(job, pod);
      }
    }

    const after = this.#count(job);
    const nowActive = this.#cache.podsOf(job.metadata.uid).filter(isPodActive);
    let conditions = [...(job.status?.conditions ?? [])];
    const status: Record<string, unknown> = { startTime };
    if (failure) {
      conditions = this.#finish(conditions, 'FailureTarget', 'Failed', failure.reason, failure.message, now);
    } else if (complete) {
      conditions = this.#completionsReachedReason
        ? this.#finish(
            conditions,
            'SuccessCriteriaMet',
            'Complete',
            'CompletionsReached',
            'Reached expected number of succeeded pods',
            now,
          )
        : this.#finish(conditions, 'SuccessCriteriaMet', 'Complete', undefined, undefined, now);
      status.completionTime = rfc3339(now);
    }
    if (nowActive.length) status.active = nowActive.length;
    if (after.succeeded) status.succeeded = after.succeeded;
    if (after.failed) status.failed = after.failed;
    status.ready = nowActive.filter(isPodReady).length;
    if (conditions.length) status.conditions = conditions;
    const updated = this.#ctx.store.update(JOBS, { ...job, status }, { subresource: 'status' }) as Job;
    for (const pod of after.counted) this.#releaseFinalizer(pod);

    if (failure) this.#events.record(COMPONENT, updated, 'Warning', failure.reason, failure.message);
    else if (complete) this.#events.record(COMPONENT, updated, 'Normal', 'Completed', 'Job completed');
    if (failure || complete) this.#syncFinished(updated, finishedCondition(updated));
    else if (deadlineAt < Infinity) this.#queue.addAfter(keyOf(job), deadlineAt - now);
  }

  /**
   * The job's succeeded/failed counts with the finished pods it still tracks (by finalizer) added: a pod
   * that is being deleted without having succeeded counts as failed.
   */
  #count(job: Job): { succeeded: number; failed: number; counted: Pod[] } {
    let succeeded = job.status?.succeeded ?? 0;
    let failed = job.status?.failed ?? 0;
    const counted: Pod[] = [];
    for (const pod of this.#cache.podsOf(job.metadata.uid)) {
      if (!hasTrackingFinalizer(pod)) continue;
      if (pod.status?.phase === 'Succeeded') succeeded++;
      else if (pod.status?.phase === 'Failed' || pod.metadata.deletionTimestamp) failed++;
      else continue;
      counted.push(pod);
    }
    return { succeeded, failed, counted };
  }

  #finish(
    conditions: Condition[],
    interim: string,
    terminal: string,
    reason: string | undefined,
    message: string | undefined,
    now: number,
  ): Condition[] {
    const condition = (type: string): Condition => ({
      type,
      status: 'True',
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
      lastProbeTime: rfc3339(now),
      lastTransitionTime: rfc3339(now),
    });
    const types = this.#interimConditions ? [interim, terminal] : [terminal];
    return [...conditions.filter((c) => !types.includes(c.type)), ...types.map(condition)];
  }

  /** Finished: track what is left, and delete the Job once its TTL after finishing has passed. */
  #syncFinished(job: Job, finished: Condition | undefined): void {
    const leftovers = this.#cache.podsOf(job.metadata.uid).filter(hasTrackingFinalizer);
    if (leftovers.length) {
      const { succeeded, failed, counted } = this.#count(job);
      if (counted.length) {
        const status = { ...job.status, ...(succeeded ? { succeeded } : {}), ...(failed ? { failed } : {}) };
        this.#ctx.store.update(JOBS, { ...job, status }, { subresource: 'status' });
        for (const pod of counted) this.#releaseFinalizer(pod);
      }
    }
    const ttl = job.spec.ttlSecondsAfterFinished;
    if (ttl === undefined || !finished) return;
    const expireAt = (Date.parse(finished.lastTransitionTime ?? '') || Date.now()) + ttl * 1000;
    const remaining = expireAt - Date.now();
    if (remaining > 0) {
      this.#queue.addAfter(keyOf(job), remaining);
      return;
    }
    // The ttlafterfinished controller deletes in the foreground, guarded by the Job's uid.
    this.#ctx.store.delete(JOBS, job.metadata.namespace, job.metadata.name, {
      propagationPolicy: 'Foreground',
      preconditions: { uid: job.metadata.uid },
    });
  }

  #newPod(job: Job): KubeObject {
    const template = job.spec.template;
    const uid = job.metadata.uid ?? '';
    const name = job.metadata.name;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: '',
        generateName: generateNameFrom(name),
        namespace: job.metadata.namespace,
        // The API server puts these on the Job's template and selector; the twin's does not, so the
        // pods get them here. Both spellings, as clusters from v1.27 have.
        labels: {
          ...template.metadata?.labels,
          'batch.kubernetes.io/controller-uid': uid,
          'batch.kubernetes.io/job-name': name,
          'controller-uid': uid,
          'job-name': name,
        },
        ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
        ownerReferences: [controllerRef(job)],
        finalizers: [JOB_TRACKING_FINALIZER],
      },
      spec: structuredClone(template.spec),
      status: { phase: 'Pending' },
    };
  }

  #releaseFinalizer(pod: Pod): void {
    const current = this.#cache.pods.get(keyOf(pod));
    if (!current || !hasTrackingFinalizer(current)) return;
    const finalizers = (current.metadata.finalizers ?? []).filter((f) => f !== JOB_TRACKING_FINALIZER);
    const { finalizers: _old, ...metadata } = current.metadata;
    this.#ctx.store.update(PODS, {
      ...current,
      metadata: { ...metadata, ...(finalizers.length ? { finalizers } : {}) },
    });
  }
}
