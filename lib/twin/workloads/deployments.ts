/**
 * The Deployment controller, owning pods directly: the twin serves no ReplicaSets (ADR 0001), so the
 * ReplicaSet a real Deployment would create for each template is only a name here, `<deployment>-<hash>`,
 * and the `pod-template-hash` label on its pods. Pods are named and labelled as that ReplicaSet's would be.
 *
 * Each sync takes one step of the real rollout (pkg/controller/deployment): RollingUpdate scales the new
 * template's pods up within maxSurge and the old ones down while at least replicas − maxUnavailable stay
 * available; Recreate removes every old pod before creating new ones. Status and the Available/Progressing
 * conditions are computed as the real controller does, so `kubectl rollout status` works.
 * Not modelled: adopting orphaned pods by selector, revision history, rollback, scaling while paused.
 */
import type { TwinContext } from '../context.ts';
import type { KubeObject, StoreEvent } from '../store.ts';
import type { WorkloadCache } from './cache.ts';
import type { EventRecorder } from './events.ts';
import {
  controllerRef,
  deletionOrder,
  findCondition,
  generateNameFrom,
  isPodActive,
  isPodReady,
  isPodTerminal,
  keyOf,
  podAvailability,
  rfc3339,
  scaledValue,
  splitKey,
  templateHash,
} from './objects.ts';
import { PodControl } from './pod-control.ts';
import { WorkQueue } from './queue.ts';
import { type Condition, DEPLOYMENTS, PODS, type Pod, type PodTemplateSpec } from './types.ts';

const COMPONENT = 'deployment-controller';
/** apps.DefaultDeploymentUniqueLabelKey */
export const POD_TEMPLATE_HASH = 'pod-template-hash';
/** The API server defaults progressDeadlineSeconds to 600. */
const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600;

interface DeploymentSpec {
  readonly replicas?: number;
  readonly template: PodTemplateSpec;
  readonly strategy?: {
    readonly type?: 'RollingUpdate' | 'Recreate';
    readonly rollingUpdate?: {
      readonly maxSurge?: number | string;
      readonly maxUnavailable?: number | string;
    };
  };
  readonly minReadySeconds?: number;
  readonly progressDeadlineSeconds?: number;
  readonly paused?: boolean;
}

interface DeploymentStatus {
  readonly observedGeneration?: number;
  readonly replicas?: number;
  readonly updatedReplicas?: number;
  readonly readyReplicas?: number;
  readonly availableReplicas?: number;
  readonly unavailableReplicas?: number;
  readonly conditions?: readonly Condition[];
  readonly collisionCount?: number;
}

interface Deployment extends KubeObject {
  readonly spec: DeploymentSpec;
  readonly status?: DeploymentStatus;
}

/** deploymentutil.ResolveFenceposts: surge rounds up, unavailable down; both 0 would deadlock, so 1. */
function fenceposts(d: Deployment, replicas: number): { maxSurge: number; maxUnavailable: number } {
  if ((d.spec.strategy?.type ?? 'RollingUpdate') !== 'RollingUpdate')
    return { maxSurge: 0, maxUnavailable: 0 };
  const r = d.spec.strategy?.rollingUpdate;
  const maxSurge = scaledValue(r?.maxSurge ?? '25%', replicas, true);
  const maxUnavailable = scaledValue(r?.maxUnavailable ?? '25%', replicas, false);
  return maxSurge === 0 && maxUnavailable === 0
    ? { maxSurge, maxUnavailable: 1 }
    : { maxSurge, maxUnavailable };
}

/** deploymentutil.SetDeploymentCondition: same status and reason leave the condition as it is. */
function setCondition(list: Condition[], next: Condition, now: number): void {
  const i = list.findIndex((c) => c.type === next.type);
  const old = list[i];
  if (old && old.status === next.status && old.reason === next.reason) return;
  const stamped: Condition = {
    ...next,
    lastUpdateTime: rfc3339(now),
    lastTransitionTime: old && old.status === next.status ? old.lastTransitionTime : rfc3339(now),
  };
  if (i >= 0) list[i] = stamped;
  else list.push(stamped);
}

export class DeploymentController {
  readonly #ctx: TwinContext;
  readonly #cache: WorkloadCache;
  readonly #events: EventRecorder;
  readonly #pods: PodControl;
  readonly #queue: WorkQueue;

  constructor(ctx: TwinContext, cache: WorkloadCache, events: EventRecorder) {
    this.#ctx = ctx;
    this.#cache = cache;
    this.#events = events;
    this.#pods = new PodControl(ctx.store, COMPONENT);
    this.#queue = new WorkQueue(COMPONENT, (key) => this.#sync(key), { minIntervalMs: 5 });
  }

  start(): void {
    for (const d of this.#ctx.store.list(DEPLOYMENTS).items) this.#queue.add(keyOf(d));
  }

  stop(): void {
    this.#queue.stop();
  }

  observe(event: StoreEvent, previous: KubeObject | undefined): void {
    if (event.key === DEPLOYMENTS) {
      if (event.type === 'DELETED') this.#queue.forget(keyOf(event.object));
      else this.#queue.add(keyOf(event.object));
    } else if (event.key === PODS) {
      for (const pod of [event.object, previous]) {
        const ref = pod?.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'Deployment');
        if (ref) this.#queue.add(`${pod?.metadata.namespace}/${ref.name}`);
      }
    }
  }

  #sync(key: string): void {
    const { namespace, name } = splitKey(key);
    const d = this.#ctx.store.tryGet(DEPLOYMENTS, namespace, name) as Deployment | undefined;
    if (!d || d.metadata.deletionTimestamp) return;
    const now = Date.now();
    const replicas = d.spec.replicas ?? 1;
    const hash = templateHash(d.spec.template, d.status?.collisionCount);
    const isNew = (p: Pod): boolean => p.metadata.labels?.[POD_TEMPLATE_HASH] === hash;
    const hadNewPods = this.#cache.podsOf(d.metadata.uid).some((p) => isPodActive(p) && isNew(p));

    if (!d.spec.paused) {
      if (d.spec.strategy?.type === 'Recreate') this.#recreate(d, hash, replicas, isNew);
      else this.#rollingUpdate(d, hash, replicas, isNew, now);
    }

    const active = this.#cache.podsOf(d.metadata.uid).filter(isPodActive);
    const createdNewTemplate = !hadNewPods && active.some(isNew);
    this.#updateStatus(d, `${name}-${hash}`, active, isNew, createdNewTemplate, now);
  }

  #recreate(d: Deployment, hash: string, replicas: number, isNew: (p: Pod) => boolean): void {
    const owned = this.#cache.podsOf(d.metadata.uid);
    const old = owned.filter((p) => isPodActive(p) && !isNew(p));
    this.#scaleDown(d, old, old.length);
    // New pods only once no old pod runs any more, terminating ones included (oldPodsRunning).
    if (this.#cache.podsOf(d.metadata.uid).some((p) => !isNew(p) && !isPodTerminal(p))) return;
    this.#scaleTo(d, hash, replicas, isNew);
  }

  #rollingUpdate(
    d: Deployment,
    hash: string,
    replicas: number,
    isNew: (p: Pod) => boolean,
    now: number,
  ): void {
    const { maxSurge, maxUnavailable } = fenceposts(d, replicas);
    const minReady = d.spec.minReadySeconds ?? 0;
    const available = (p: Pod): boolean => podAvailability(p, minReady, now).available;
    const activeNow = (): Pod[] => this.#cache.podsOf(d.metadata.uid).filter(isPodActive);

    let active = activeNow();
    if (!active.some((p) => !isNew(p))) {
      this.#scaleTo(d, hash, replicas, isNew);
      return;
    }
    // More pods than the surge allows (scaled down mid-rollout): old ones go first.
    const excess = active.length - (replicas + maxSurge);
    if (excess > 0) {
      this.#scaleDown(
        d,
        active.filter((p) => !isNew(p)),
        excess,
      );
      active = activeNow();
    }
    const newCount = active.filter(isNew).length;
    const up = Math.min(replicas + maxSurge - active.length, replicas - newCount);
    if (up > 0) this.#scaleUp(d, hash, newCount, up);
    active = activeNow();

    // reconcileOldReplicaSets: first old pods that are not available, within what keeps minAvailable…
    const minAvailable = replicas - Math.min(maxUnavailable, replicas);
    const newUnavailable = active.filter((p) => isNew(p) && !available(p)).length;
    const maxScaledDown = active.length - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return;
    const unhealthy = active.filter((p) => !isNew(p) && !available(p));
    this.#scaleDown(d, unhealthy, Math.min(maxScaledDown, unhealthy.length));
    // …then available old pods, as long as enough stay available.
    active = activeNow();
    const canRemove = active.filter(available).length - minAvailable;
    if (canRemove > 0)
      this.#scaleDown(
        d,
        active.filter((p) => !isNew(p)),
        canRemove,
      );
  }

  /** Make the new template's pods exactly `replicas`. */
  #scaleTo(d: Deployment, hash: string, replicas: number, isNew: (p: Pod) => boolean): void {
    const current = this.#cache.podsOf(d.metadata.uid).filter((p) => isPodActive(p) && isNew(p));
    if (current.length < replicas) this.#scaleUp(d, hash, current.length, replicas - current.length);
    else if (current.length > replicas) this.#scaleDown(d, current, current.length - replicas);
  }

  #scaleUp(d: Deployment, hash: string, from: number, count: number): void {
    const rsName = `${d.metadata.name}-${hash}`;
    const template = d.spec.template;
    for (let i = 0; i < count; i++) {
      this.#pods.create(d, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: '',
          generateName: generateNameFrom(rsName),
          namespace: d.metadata.namespace,
          labels: { ...template.metadata?.labels, [POD_TEMPLATE_HASH]: hash },
          ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
          ownerReferences: [controllerRef(d)],
        },
        spec: structuredClone(template.spec),
        status: { phase: 'Pending' },
      });
    }
    this.#scalingEvent(d, 'up', rsName, from, from + count);
  }

  /** Delete `count` of `pods` in the ReplicaSet controller's order, reporting per template hash. */
  #scaleDown(d: Deployment, pods: readonly Pod[], count: number): void {
    if (count <= 0) return;
    const victims = [...pods].sort(deletionOrder((p) => this.#cache.seenOrder(p))).slice(0, count);
    const hashOf = (p: Pod): string => p.metadata.labels?.[POD_TEMPLATE_HASH] ?? '';
    for (const hash of new Set(victims.map(hashOf))) {
      const from = this.#cache
        .podsOf(d.metadata.uid)
        .filter((p) => isPodActive(p) && hashOf(p) === hash).length;
      const gone = victims.filter((p) => hashOf(p) === hash);
      for (const pod of gone) this.#pods.delete(d, pod);
      this.#scalingEvent(d, 'down', `${d.metadata.name}-${hash}`, from, from - gone.length);
    }
  }

  #scalingEvent(d: Deployment, direction: 'up' | 'down', rsName: string, from: number, to: number): void {
    // The wording of v1.28+ ("from N to M"); earlier releases said "Scaled up replica set x to M".
    this.#events.record(
      COMPONENT,
      d,
      'Normal',
      'ScalingReplicaSet',
      `Scaled ${direction} replica set ${rsName} from ${from} to ${to}`,
    );
  }

  #updateStatus(
    d: Deployment,
    rsName: string,
    active: readonly Pod[],
    isNew: (p: Pod) => boolean,
    createdNewTemplate: boolean,
    now: number,
  ): void {
    const replicas = d.spec.replicas ?? 1;
    const minReady = d.spec.minReadySeconds ?? 0;
    let availableCount = 0;
    let soonest = Infinity;
    for (const pod of active) {
      const a = podAvailability(pod, minReady, now);
      if (a.available) availableCount++;
      else if (a.availableInMs !== undefined) soonest = Math.min(soonest, a.availableInMs);
    }
    const old = d.status ?? {};
    const counts = {
      replicas: active.length,
      updatedReplicas: active.filter(isNew).length,
      readyReplicas: active.filter(isPodReady).length,
      availableReplicas: availableCount,
      unavailableReplicas: Math.max(0, active.length - availableCount),
    };
    const conditions = [...(old.conditions ?? [])];
    const { maxUnavailable } = fenceposts(d, replicas);
    setCondition(
      conditions,
      availableCount >= replicas - Math.min(maxUnavailable, replicas)
        ? {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          }
        : {
            type: 'Available',
            status: 'False',
            reason: 'MinimumReplicasUnavailable',
            message: 'Deployment does not have minimum availability.',
          },
      now,
    );
    const deadlineMs = this.#progress(d, rsName, old, counts, conditions, createdNewTemplate, now);

    const status: Record<string, unknown> = { observedGeneration: d.metadata.generation };
    // Zero counts are omitted from the JSON (omitempty), as the real API serves them.
    for (const [field, value] of Object.entries(counts)) if (value) status[field] = value;
    status.conditions = conditions;
    if (old.collisionCount !== undefined) status.collisionCount = old.collisionCount;
    this.#ctx.store.update(DEPLOYMENTS, { ...d, status }, { subresource: 'status' });

    const recheck = Math.min(soonest, deadlineMs);
    if (recheck < Infinity) this.#queue.addAfter(keyOf(d), recheck);
  }

  /**
   * The Progressing condition (syncRolloutStatus). Returns in how many ms the deadline passes, if the
   * rollout is still under way, so the sync can look again then.
   */
  #progress(
    d: Deployment,
    rsName: string,
    old: DeploymentStatus,
    counts: { replicas: number; updatedReplicas: number; readyReplicas: number; availableReplicas: number },
    conditions: Condition[],
    createdNewTemplate: boolean,
    now: number,
  ): number {
    const replicas = d.spec.replicas ?? 1;
    const current = findCondition(conditions, 'Progressing');
    if (d.spec.paused) {
      setCondition(
        conditions,
        {
          type: 'Progressing',
          status: 'Unknown',
          reason: 'DeploymentPaused',
          message: 'Deployment is paused',
        },
        now,
      );
      return Infinity;
    }
    const complete =
      counts.updatedReplicas === replicas &&
      counts.replicas === replicas &&
      counts.availableReplicas === replicas;
    if (complete) {
      setCondition(
        conditions,
        {
          type: 'Progressing',
          status: 'True',
          reason: 'NewReplicaSetAvailable',
          message: `ReplicaSet "${rsName}" has successfully progressed.`,
        },
        now,
      );
      return Infinity;
    }
    if (createdNewTemplate) {
      replaceProgressing(conditions, 'NewReplicaSetCreated', `Created new replica set "${rsName}"`, now);
    } else if (
      counts.updatedReplicas > (old.updatedReplicas ?? 0) ||
      counts.replicas - counts.updatedReplicas < (old.replicas ?? 0) - (old.updatedReplicas ?? 0) ||
      counts.readyReplicas > (old.readyReplicas ?? 0) ||
      counts.availableReplicas > (old.availableReplicas ?? 0)
    ) {
      // Progress moves lastUpdateTime even when the reason stays (the special case in syncRolloutStatus).
      replaceProgressing(conditions, 'ReplicaSetUpdated', `ReplicaSet "${rsName}" is progressing.`, now);
    }
    const latest = findCondition(conditions, 'Progressing') ?? current;
    const deadline = (d.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS) * 1000;
    const since = Date.parse(latest?.lastUpdateTime ?? '') || now;
    if (latest?.reason === 'ProgressDeadlineExceeded') return Infinity;
    if (since + deadline <= now) {
      setCondition(
        conditions,
        {
          type: 'Progressing',
          status: 'False',
          reason: 'ProgressDeadlineExceeded',
          message: `ReplicaSet "${rsName}" has timed out progressing.`,
        },
        now,
      );
      return Infinity;
    }
    return since + deadline - now;
  }
}

function replaceProgressing(conditions: Condition[], reason: string, message: string, now: number): void {
  const i = conditions.findIndex((c) => c.type === 'Progressing');
  const old = conditions[i];
  const next: Condition = {
    type: 'Progressing',
    status: 'True',
    reason,
    message,
    lastUpdateTime: rfc3339(now),
    lastTransitionTime:
      old?.status === 'True' && old.lastTransitionTime ? old.lastTransitionTime : rfc3339(now),
  };
  if (i >= 0) conditions[i] = next;
  else conditions.push(next);
}
