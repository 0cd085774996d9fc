/**
 * The DaemonSet controller (pkg/controller/daemon): one pod per node the DaemonSet should run on, pinned
 * the real way (required node affinity `metadata.name In [node]`, placed by the scheduler), with the
 * tolerations the controller adds to every daemon pod; pods leave nodes that stop qualifying; a changed
 * template rolls out RollingUpdate (maxUnavailable at a time) or OnDelete (only pods deleted by someone
 * are replaced). The ControllerRevision behind `controller-revision-hash` is not served; its hash is.
 * Not modelled: maxSurge, failed-pod backoff, adopting orphans by selector.
 */
import type { TwinContext } from '../context.ts';
import type { KubeObject, StoreEvent } from '../store.ts';
import type { WorkloadCache } from './cache.ts';
import type { EventRecorder } from './events.ts';
import {
  controllerRef,
  generateNameFrom,
  isPodReady,
  keyOf,
  podAvailability,
  scaledValue,
  splitKey,
  templateHash,
} from './objects.ts';
import {
  matchesNodeSelectorAndAffinity,
  NODE_NAME_FIELD,
  nodeNamesRequired,
  TAINT_NOT_READY,
  TAINT_UNSCHEDULABLE,
  untoleratedTaint,
} from './placement.ts';
import { PodControl } from './pod-control.ts';
import { WorkQueue } from './queue.ts';
import {
  DAEMONSETS,
  NODES,
  type Node,
  PODS,
  type Pod,
  type PodSpec,
  type PodTemplateSpec,
  type Toleration,
} from './types.ts';

const COMPONENT = 'daemonset-controller';
/** apps.DefaultDaemonSetUniqueLabelKey */
export const CONTROLLER_REVISION_HASH = 'controller-revision-hash';

interface DaemonSet extends KubeObject {
  readonly spec: {
    readonly template: PodTemplateSpec;
    readonly updateStrategy?: {
      readonly type?: 'RollingUpdate' | 'OnDelete';
      readonly rollingUpdate?: { readonly maxUnavailable?: number | string };
    };
    readonly minReadySeconds?: number;
  };
}

/** util.AddOrUpdateDaemonPodTolerations (pkg/controller/daemon/util/daemonset_util.go). */
function daemonTolerations(spec: PodSpec): Toleration[] {
  const defaults: Toleration[] = [
    { key: TAINT_NOT_READY, operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: TAINT_UNSCHEDULABLE, operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (spec.hostNetwork) {
    defaults.push({
      key: 'node.kubernetes.io/network-unavailable',
      operator: 'Exists',
      effect: 'NoSchedule',
    });
  }
  let tolerations = [...(spec.tolerations ?? [])];
  for (const d of defaults) {
    // AddOrUpdateTolerationInPodSpec: a toleration with the same key, operator, value and effect is replaced.
    const same = (t: Toleration): boolean =>
      (t.key ?? '') === d.key &&
      (t.operator ?? 'Equal') === d.operator &&
      (t.value ?? '') === '' &&
      (t.effect ?? '') === d.effect;
    tolerations = tolerations.some(same) ? tolerations.map((t) => (same(t) ? d : t)) : [...tolerations, d];
  }
  return tolerations;
}

/**
 * NodeShouldRunDaemonPod: whether a daemon pod should be created on the node, and whether one already
 * there may stay (it may when the only untolerated taints are NoSchedule). Only the node's own taints
 * count, not its readiness.
 */
function shouldRunOn(spec: PodSpec, node: Node): { shouldRun: boolean; shouldContinueRunning: boolean } {
  if (spec.nodeName && spec.nodeName !== node.metadata.name)
    return { shouldRun: false, shouldContinueRunning: false };
  if (!matchesNodeSelectorAndAffinity(spec, node)) return { shouldRun: false, shouldContinueRunning: false };
  const taints = node.spec?.taints ?? [];
  if (untoleratedTaint(taints, spec.tolerations)) {
    return {
      shouldRun: false,
      shouldContinueRunning: !untoleratedTaint(taints, spec.tolerations, ['NoExecute']),
    };
  }
  return { shouldRun: true, shouldContinueRunning: true };
}

/** util.GetTargetNodeName: the bound node, else the node the pod's affinity names. */
function targetNode(pod: Pod): string | undefined {
  if (pod.spec.nodeName) return pod.spec.nodeName;
  const names = nodeNamesRequired(pod.spec);
  return names?.size === 1 ? [...names][0] : undefined;
}

/** What of a node decides whether daemon pods belong on it. */
function placementSignature(node: Node): string {
  return JSON.stringify([node.metadata.labels, node.spec?.taints]);
}

export class DaemonSetController {
  readonly #ctx: TwinContext;
  readonly #cache: WorkloadCache;
  readonly #pods: PodControl;
  readonly #queue: WorkQueue;
  readonly #daemonSets = new Set<string>();
  readonly #signatures = new Map<string, string>();

  constructor(ctx: TwinContext, cache: WorkloadCache, events: EventRecorder) {
    this.#ctx = ctx;
    this.#cache = cache;
    this.#pods = new PodControl(ctx.store, COMPONENT, events);
    // A sync walks every node: coalesce bursts of pod and node events into one sync per 20 ms.
    this.#queue = new WorkQueue(COMPONENT, (key) => this.#sync(key), { minIntervalMs: 20 });
  }

  start(): void {
    for (const node of this.#cache.nodes.values()) {
      this.#signatures.set(node.metadata.name, placementSignature(node));
    }
    for (const ds of this.#ctx.store.list(DAEMONSETS).items) {
      this.#daemonSets.add(keyOf(ds));
      this.#queue.add(keyOf(ds));
    }
  }

  stop(): void {
    this.#queue.stop();
  }

  observe(event: StoreEvent, previous: KubeObject | undefined): void {
    if (event.key === DAEMONSETS) {
      const key = keyOf(event.object);
      if (event.type === 'DELETED') {
        this.#daemonSets.delete(key);
        this.#queue.forget(key);
      } else {
        this.#daemonSets.add(key);
        this.#queue.add(key);
      }
    } else if (event.key === PODS) {
      for (const pod of [event.object, previous]) {
        const ref = pod?.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'DaemonSet');
        if (ref) this.#queue.add(`${pod?.metadata.namespace}/${ref.name}`);
      }
    } else if (event.key === NODES) {
      const name = event.object.metadata.name;
      const signature = event.type === 'DELETED' ? undefined : placementSignature(event.object as Node);
      if (signature === this.#signatures.get(name)) return;
      if (signature === undefined) this.#signatures.delete(name);
      else this.#signatures.set(name, signature);
      for (const key of this.#daemonSets) this.#queue.add(key);
    }
  }

  #sync(key: string): void {
    const { namespace, name } = splitKey(key);
    const ds = this.#ctx.store.tryGet(DAEMONSETS, namespace, name) as DaemonSet | undefined;
    if (!ds || ds.metadata.deletionTimestamp) return;
    const hash = templateHash(ds.spec.template);
    const podSpec: PodSpec = {
      ...ds.spec.template.spec,
      tolerations: daemonTolerations(ds.spec.template.spec),
    };

    const byNode = this.#podsByNode(ds);
    const wanted: string[] = [];
    for (const node of this.#cache.nodes.values()) {
      const nodeName = node.metadata.name;
      const pods = byNode.get(nodeName) ?? [];
      byNode.delete(nodeName);
      const { shouldRun, shouldContinueRunning } = shouldRunOn(podSpec, node);
      if (shouldRun && pods.length === 0) {
        wanted.push(nodeName);
      } else if (shouldContinueRunning) {
        // A failed daemon pod is deleted, and replaced on the next sync; of duplicates the oldest stays.
        const failed = pods.filter((p) => p.status?.phase === 'Failed');
        const running = pods.filter((p) => p.status?.phase !== 'Failed');
        const extra = running.sort((a, b) => this.#cache.seenOrder(a) - this.#cache.seenOrder(b)).slice(1);
        for (const pod of [...failed, ...extra]) this.#pods.delete(ds, pod);
      } else {
        for (const pod of pods) this.#pods.delete(ds, pod);
      }
    }
    // Pods still waiting for a node that is gone; bound ones are the pod garbage collector's.
    for (const pods of byNode.values()) {
      for (const pod of pods) if (!pod.spec.nodeName) this.#pods.delete(ds, pod);
    }
    for (const nodeName of wanted) this.#pods.create(ds, this.#newPod(ds, podSpec, hash, nodeName));
    if ((ds.spec.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate')
      this.#rollingUpdate(ds, podSpec, hash);
    this.#updateStatus(ds, podSpec, hash);
  }

  /** The DaemonSet's live pods (not being deleted) by target node. */
  #podsByNode(ds: DaemonSet): Map<string, Pod[]> {
    const byNode = new Map<string, Pod[]>();
    for (const pod of this.#cache.podsOf(ds.metadata.uid)) {
      if (pod.metadata.deletionTimestamp) continue;
      const node = targetNode(pod);
      if (!node) continue;
      const list = byNode.get(node);
      if (list) list.push(pod);
      else byNode.set(node, [pod]);
    }
    return byNode;
  }

  #newPod(ds: DaemonSet, podSpec: PodSpec, hash: string, nodeName: string): KubeObject {
    const template = ds.spec.template;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: '',
        generateName: generateNameFrom(ds.metadata.name),
        namespace: ds.metadata.namespace,
        labels: { ...template.metadata?.labels, [CONTROLLER_REVISION_HASH]: hash },
        ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
        ownerReferences: [controllerRef(ds)],
      },
      spec: {
        ...structuredClone(podSpec),
        // util.ReplaceDaemonSetPodNodeNameNodeAffinity: the scheduler places the pod on exactly this node.
        affinity: {
          ...structuredClone(podSpec.affinity ?? {}),
          nodeAffinity: {
            ...structuredClone(podSpec.affinity?.nodeAffinity ?? {}),
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: NODE_NAME_FIELD, operator: 'In', values: [nodeName] }] },
              ],
            },
          },
        },
      },
      status: { phase: 'Pending' },
    };
  }

  /** rollingUpdate without surge: replace old pods while at most maxUnavailable nodes lack an available pod. */
  #rollingUpdate(ds: DaemonSet, podSpec: PodSpec, hash: string): void {
    const now = Date.now();
    const minReady = ds.spec.minReadySeconds ?? 0;
    const available = (p: Pod): boolean => podAvailability(p, minReady, now).available;
    const byNode = this.#podsByNode(ds);
    const desired = [...this.#cache.nodes.values()].filter((n) => shouldRunOn(podSpec, n).shouldRun);
    const maxUnavailable = scaledValue(
      ds.spec.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1,
      desired.length,
      true,
    );
    let unavailable = 0;
    const candidates: Pod[] = [];
    for (const node of desired) {
      const pods = byNode.get(node.metadata.name) ?? [];
      const current = pods.find((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH] === hash);
      const old = pods.find((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH] !== hash);
      if (current) {
        if (old || !available(current)) unavailable++;
      } else if (!old) {
        unavailable++;
      } else if (!available(old)) {
        // An old pod that is not available anyway is replaced at once.
        this.#pods.delete(ds, old);
        unavailable++;
      } else {
        candidates.push(old);
      }
    }
    for (const pod of candidates.slice(0, Math.max(0, maxUnavailable - unavailable)))
      this.#pods.delete(ds, pod);
  }

  #updateStatus(ds: DaemonSet, podSpec: PodSpec, hash: string): void {
    const now = Date.now();
    const minReady = ds.spec.minReadySeconds ?? 0;
    const byNode = this.#podsByNode(ds);
    let desired = 0;
    let current = 0;
    let misscheduled = 0;
    let ready = 0;
    let available = 0;
    let updated = 0;
    let soonest = Infinity;
    for (const node of this.#cache.nodes.values()) {
      const pods = (byNode.get(node.metadata.name) ?? []).sort(
        (a, b) => this.#cache.seenOrder(a) - this.#cache.seenOrder(b),
      );
      const pod = pods[0];
      if (!shouldRunOn(podSpec, node).shouldRun) {
        if (pod) misscheduled++;
        continue;
      }
      desired++;
      if (!pod) continue;
      current++;
      if (isPodReady(pod)) ready++;
      const a = podAvailability(pod, minReady, now);
      if (a.available) available++;
      else if (a.availableInMs !== undefined) soonest = Math.min(soonest, a.availableInMs);
      if (pod.metadata.labels?.[CONTROLLER_REVISION_HASH] === hash) updated++;
    }
    const status: Record<string, unknown> = {
      currentNumberScheduled: current,
      numberMisscheduled: misscheduled,
      desiredNumberScheduled: desired,
      numberReady: ready,
      observedGeneration: ds.metadata.generation,
    };
    // The optional counts are omitted when zero (omitempty), as the real API serves them.
    if (updated) status.updatedNumberScheduled = updated;
    if (available) status.numberAvailable = available;
    if (desired - available) status.numberUnavailable = desired - available;
    this.#ctx.store.update(DAEMONSETS, { ...ds, status }, { subresource: 'status' });
    if (soonest < Infinity) this.#queue.addAfter(keyOf(ds), soonest);
  }
}
