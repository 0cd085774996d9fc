/**
 * Which pods are cloud controllers, read from their containers' command lines the way the binaries read
 * their flags: kube-controller-manager static pods (in-tree `--cloud-provider`) and external
 * cloud-controller-managers (a container named `cloud-controller-manager`).
 */
import { isInTreeProvider } from '../../controlplane/cloud-flag-rules.ts';
import { booleanFlag, parseFlags } from '../../controlplane/flags.ts';
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
    const flags = parseFlags(argv);
    const cloudProvider = flags.get('cloud-provider');
    if (!isKcm && cloudProvider !== provider) continue;
    const kind: ControllerKind = isKcm ? 'kube-controller-manager' : 'cloud-controller-manager';
    const cloudLoops = isKcm ? cloudProvider === provider && isInTreeProvider(provider) : true;
    const syncs = Number.parseInt(flags.get('concurrent-node-syncs') ?? '', 10);
    return {
      kind,
      namespace,
      pod: pod.metadata.name,
      uid: pod.metadata.uid ?? '',
      node: spec?.nodeName ?? '',
      running: podReady(pod) && !pod.metadata.deletionTimestamp,
      cloudLoops,
      leaderElect: booleanFlag(flags, 'leader-elect', true),
      leaderMigration: booleanFlag(flags, 'enable-leader-migration', false),
      concurrentNodeSyncs: syncs > 0 ? syncs : 1,
    };
  }
  return undefined;
}
