/**
 * Which pods are cloud controllers, read from their containers' command lines the way the binaries read
 * their flags: kube-controller-manager static pods (in-tree `--cloud-provider`), external
 * cloud-controller-managers (a container named `cloud-controller-manager`) and per-node cloud node managers
 * (a container named `cloud-node-manager`, Azure's DaemonSet).
 */
import { isInTreeName } from '../nodes/binary-start.ts';
import { flagIsTrue, readCommandLine } from '../nodes/command-line.ts';
import type { Provider } from '../spec.ts';
import type { KubeObject } from '../store.ts';

export type ControllerKind = 'kube-controller-manager' | 'cloud-controller-manager';

/** What a controller pod's flags say about it. */
export interface ControllerCandidate {
  readonly kind: ControllerKind;
  readonly namespace: string;
  readonly pod: string;
  readonly uid: string;
  readonly node: string;
  /** Whether it is running: the pod is Ready and not being deleted. */
  readonly running: boolean;
  /** Whether it runs the cloud loops (a KCM only with an in-tree provider matching the cloud). */
  readonly cloudLoops: boolean;
  /**
   * Whether its cloud loops include the cloud-node controller that initialises tainted nodes: a CCM unless
   * its `--controllers` turns `cloud-node` off (Azure's `*,-cloud-node`); never a KCM.
   */
  readonly initialisesNodes: boolean;
  readonly leaderElect: boolean;
  readonly leaderMigration: boolean;
  /** `--concurrent-node-syncs` (cloud-node controller workers; default 1 in k8s.io/cloud-provider). */
  readonly concurrentNodeSyncs: number;
}

interface Container {
  name?: string;
  command?: string[];
  args?: string[];
}

/**
 * Whether `--controllers` (a comma list; absent: the default `*`) enables `name`, as
 * k8s.io/controller-manager's IsControllerEnabled reads it: the first explicit `name` or `-name` wins,
 * else `*` enables it (none of the cloud controllers is disabled by default).
 */
export function controllerEnabled(controllers: string | undefined, name: string): boolean {
  let star = false;
  for (const item of (controllers ?? '*').split(',').map((c) => c.trim())) {
    if (item === name) return true;
    if (item === `-${name}`) return false;
    if (item === '*') star = true;
  }
  return star;
}

export function podReady(pod: KubeObject): boolean {
  const conditions = (pod.status as { conditions?: { type: string; status: string }[] } | undefined)
    ?.conditions;
  return conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The controller a pod runs, if it is one; `undefined` for every other pod. */
export function controllerCandidate(pod: KubeObject, provider: Provider): ControllerCandidate | undefined {
  const spec = pod.spec as { containers?: Container[]; nodeName?: string } | undefined;
  const namespace = pod.metadata.namespace ?? 'default';
  for (const container of spec?.containers ?? []) {
    const isKcm = container.name === 'kube-controller-manager' && namespace === 'kube-system';
    if (!isKcm && container.name !== 'cloud-controller-manager') continue;
    const argv = [...(container.command ?? []), ...(container.args ?? [])];
    const { flags } = readCommandLine(argv);
    const cloudProvider = flags.get('cloud-provider');
    if (!isKcm && cloudProvider !== provider) continue;
    const kind: ControllerKind = isKcm ? 'kube-controller-manager' : 'cloud-controller-manager';
    const cloudLoops = isKcm ? cloudProvider === provider && isInTreeName(provider) : true;
    const syncs = Number.parseInt(flags.get('concurrent-node-syncs') ?? '', 10);
    return {
      kind,
      namespace,
      pod: pod.metadata.name,
      uid: pod.metadata.uid ?? '',
      node: spec?.nodeName ?? '',
      running: podReady(pod) && !pod.metadata.deletionTimestamp,
      cloudLoops,
      initialisesNodes: !isKcm && controllerEnabled(flags.get('controllers'), 'cloud-node'),
      leaderElect: flagIsTrue(flags, 'leader-elect', true),
      leaderMigration: flagIsTrue(flags, 'enable-leader-migration', false),
      concurrentNodeSyncs: syncs > 0 ? syncs : 1,
    };
  }
  return undefined;
}

/**
 * The node a running cloud-node-manager pod initialises: its own (the DaemonSet passes
 * `--node-name=$(NODE_NAME)`, and the binary reads only that node; cloud-provider-azure pkg/nodemanager).
 * Undefined for any other pod, and for one not Ready or being deleted. It elects no leader: one per node.
 */
export function nodeManagerNode(pod: KubeObject): string | undefined {
  const spec = pod.spec as { containers?: Container[]; nodeName?: string } | undefined;
  if (!spec?.nodeName || !spec.containers?.some((c) => c.name === 'cloud-node-manager')) return undefined;
  return podReady(pod) && !pod.metadata.deletionTimestamp ? spec.nodeName : undefined;
}
