/**
 * Test support for the workload controllers: an ObjectStore with the controllers running on it, Nodes
 * written directly, and a stand-in kubelet that moves pods bound to a Ready node to Running and Ready (or
 * to whatever phase a test decides). No API server, no node model: only the controllers under test.
 */
import { fileURLToPath } from 'node:url';

import type { TwinContext } from '../../lib/twin/context.ts';
import { Faults } from '../../lib/twin/faults.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { type KubeObject, ObjectStore } from '../../lib/twin/store.ts';
import { startWorkloadControllers, type WorkloadControllers } from '../../lib/twin/workloads/index.ts';
import type { Condition, Pod, Taint } from '../../lib/twin/workloads/types.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url));

export const UNINITIALIZED: Taint = {
  key: 'node.cloudprovider.kubernetes.io/uninitialized',
  value: 'true',
  effect: 'NoSchedule',
};
export const CONTROL_PLANE: Taint = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

/** What the stand-in kubelet does with a pod bound to its node. */
export type PodOutcome = 'Running' | 'Succeeded' | 'Failed' | 'Pending';

export interface NodeOptions {
  readonly ready?: boolean;
  readonly taints?: readonly Taint[];
  readonly labels?: Record<string, string>;
  readonly unschedulable?: boolean;
}

export interface Harness {
  readonly store: ObjectStore;
  /** Decides each bound pod's fate; the default runs every pod. */
  outcome: (pod: Pod) => PodOutcome;
  addNode(name: string, opts?: NodeOptions): KubeObject;
  /** Change a node (labels, taints, readiness, cordon). */
  editNode(name: string, opts: NodeOptions): KubeObject;
  pod(namespace: string, name: string): Pod | undefined;
  podsOf(owner: KubeObject): Pod[];
  events(reason: string): KubeObject[];
  stop(): Promise<void>;
}

function readyCondition(ready: boolean): Condition {
  return {
    type: 'Ready',
    status: ready ? 'True' : 'False',
    reason: ready ? 'KubeletReady' : 'KubeletNotReady',
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

function nodeObject(name: string, opts: NodeOptions): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...opts.labels } },
    spec: { ...(opts.taints?.length ? { taints: [...opts.taints] } : {}), unschedulable: opts.unschedulable },
    status: { conditions: [readyCondition(opts.ready ?? true)] },
  };
}

export async function startHarness(opts: { kubernetesVersion?: string } = {}): Promise<Harness> {
  const loaded = await loadTwinSpec(FIXTURE);
  const spec = { ...loaded, kubernetesVersion: opts.kubernetesVersion ?? loaded.kubernetesVersion };
  const store = new ObjectStore();
  const abort = new AbortController();
  const ctx: TwinContext = {
    spec,
    store,
    stateDir: '/nonexistent',
    faults: new Faults([]),
    signal: abort.signal,
    startedAt: Date.now(),
  };
  const controllers: WorkloadControllers = startWorkloadControllers(ctx);
  const harness: Harness = {
    store,
    outcome: () => 'Running',
    addNode: (name, nodeOpts = {}) => store.create('nodes', nodeObject(name, nodeOpts)),
    editNode: (name, nodeOpts) => {
      const node = structuredClone(store.get('nodes', undefined, name)) as KubeObject & {
        spec: Record<string, unknown>;
        status: { conditions: Condition[] };
      };
      if (nodeOpts.labels) node.metadata.labels = { ...node.metadata.labels, ...nodeOpts.labels };
      if (nodeOpts.taints) node.spec.taints = [...nodeOpts.taints];
      if (nodeOpts.unschedulable !== undefined) node.spec.unschedulable = nodeOpts.unschedulable;
      const updated = store.update('nodes', node);
      if (nodeOpts.ready === undefined) return updated;
      return store.update(
        'nodes',
        { ...updated, status: { conditions: [readyCondition(nodeOpts.ready)] } },
        { subresource: 'status' },
      );
    },
    pod: (namespace, name) => store.tryGet('pods', namespace, name) as Pod | undefined,
    podsOf: (owner) =>
      store
        .list('pods', owner.metadata.namespace)
        .items.filter((p) => p.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid)) as Pod[],
    events: (reason) => store.list('events').items.filter((e) => e.reason === reason),
    stop: async () => {
      unsubscribe();
      abort.abort();
      await controllers.stop();
    },
  };
  const unsubscribe = runKubelets(harness);
  return harness;
}

/**
 * The stand-in kubelets: a pod bound to an existing Ready node that has not started gets the phase the
 * harness's `outcome` picks, with the container state a kubelet would report. Writes happen on a later
 * turn, never inside the store's event.
 */
function runKubelets(h: Harness): () => void {
  const started = new Set<string>();
  const timers = new Set<NodeJS.Immediate>();
  const run = (key: string): void => {
    const [namespace = '', name = ''] = key.split('/');
    const pod = h.pod(namespace, name);
    const nodeName = pod?.spec.nodeName;
    if (!pod || !nodeName || pod.metadata.deletionTimestamp || started.has(pod.metadata.uid ?? '')) return;
    const node = h.store.tryGet('nodes', undefined, nodeName) as { status?: { conditions?: Condition[] } };
    if (!node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return;
    const phase = h.outcome(pod);
    if (phase === 'Pending') return;
    started.add(pod.metadata.uid ?? '');
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const running = phase === 'Running';
    const state = running
      ? { running: { startedAt: now } }
      : {
          terminated: {
            exitCode: phase === 'Succeeded' ? 0 : 1,
            reason: phase === 'Succeeded' ? 'Completed' : 'Error',
            message: `{"result":"${phase}"}`,
            startedAt: now,
            finishedAt: now,
          },
        };
    h.store.update(
      'pods',
      {
        ...pod,
        status: {
          ...pod.status,
          phase,
          conditions: [
            ...(pod.status?.conditions ?? []).filter((c) => c.type === 'PodScheduled'),
            { type: 'Ready', status: running ? 'True' : 'False', lastTransitionTime: now },
          ],
          containerStatuses: [{ name: 'main', ready: running, restartCount: 0, state }],
        },
      },
      { subresource: 'status' },
    );
  };
  const kick = (key: string): void => {
    const timer = setImmediate(() => {
      timers.delete(timer);
      run(key);
    });
    timers.add(timer);
  };
  const unsubscribe = h.store.subscribe((event) => {
    if (event.key === 'pods' && event.type !== 'DELETED') {
      kick(`${event.object.metadata.namespace}/${event.object.metadata.name}`);
    } else if (event.key === 'nodes' && event.type !== 'DELETED') {
      // A node turning Ready starts the pods waiting on it.
      for (const pod of h.store.list('pods').items) {
        if ((pod as Pod).spec.nodeName === event.object.metadata.name)
          kick(`${pod.metadata.namespace}/${pod.metadata.name}`);
      }
    }
  });
  return () => {
    unsubscribe();
    for (const t of timers) clearImmediate(t);
  };
}

/** Poll until `check` returns a truthy value (or stops throwing), then return it. */
export async function eventually<T>(
  check: () => T | undefined | false | null,
  { timeoutMs = 5_000, what = 'the condition' }: { timeoutMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = check();
      if (value) return value;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw lastError ?? new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `eventually` for assertions: retries until the expectations pass. */
export async function eventuallyExpect(assertions: () => void, what?: string): Promise<void> {
  await eventually(
    () => {
      assertions();
      return true;
    },
    { what: what ?? 'expectations' },
  );
}

export function condition(obj: KubeObject | undefined, type: string): Condition | undefined {
  return ((obj?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find(
    (c) => c.type === type,
  );
}
