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
  /**
   * Whether its cloud loops include the cloud-node-lifecycle controller (deletes NotReady nodes the cloud
   * says are gone): on unless its `--controllers` turns it off, by its alias or its canonical name (1.28+).
   */
  readonly nodeLifecycle: boolean;
  readonly leaderElect: boolean;
  readonly leaderMigration: boolean;
  /** `--concurrent-node-syncs` (cloud-node controller workers; default 1 in k8s.io/cloud-provider). */
  readonly concurrentNodeSyncs: number;
  /** What it does with node CIDRs and cloud routes, when it leads. */
  readonly network: NetworkLoops;
  /** The Kubernetes minor its image's tag names (`…:v1.29.3` → 29): its k8s.io/cloud-provider's. */
  readonly minor: number | undefined;
}

/**
 * The node-network loops a controller manager runs, from its own flags and upstream's defaults
 * (`--allocate-node-cidrs=false`, `--configure-cloud-routes=true`, `--cidr-allocator-type=RangeAllocator`).
 */
export interface NetworkLoops {
  /**
   * Its route controller: a KCM's only with an in-tree cloud and `--allocate-node-cidrs`
   * (cmd/kube-controller-manager/app/core.go startNodeRouteController); a CCM's on `--configure-cloud-routes`
   * alone (k8s.io/cloud-provider app/core.go startRouteController, since 1.21).
   */
  readonly routes: boolean;
  /**
   * Its node-ipam controller's allocator, when it runs one: a KCM's with `--allocate-node-cidrs` (its
   * CloudAllocator only with the in-tree gce cloud: without one KCM refuses it); a CCM's only where the
   * provider's CCM has one (GCE's and Azure's).
   */
  readonly nodeIpam: 'range' | 'cloud' | undefined;
  /** `--cluster-cidr`: the range it allocates from, and the routes it manages. */
  readonly clusterCidr: string | undefined;
}

/** Providers whose CCM binary registers a node-ipam controller (cloud-provider-gcp, cloud-provider-azure). */
const CCM_NODE_IPAM: readonly Provider[] = ['gce', 'azure'];

function networkLoops(
  kind: ControllerKind,
  flags: ReadonlyMap<string, string>,
  provider: Provider,
  inTreeLoops: boolean,
): NetworkLoops {
  const controllers = flags.get('controllers');
  const allocates = flagIsTrue(flags, 'allocate-node-cidrs', false);
  const routesOn =
    flagIsTrue(flags, 'configure-cloud-routes', true) &&
    controllerEnabled(controllers, ['node-route-controller', 'route']);
  const cloudAllocator = flags.get('cidr-allocator-type') === 'CloudAllocator';
  const ipamOn =
    allocates &&
    controllerEnabled(controllers, ['node-ipam-controller', 'nodeipam']) &&
    (kind === 'kube-controller-manager'
      ? !cloudAllocator || (inTreeLoops && provider === 'gce')
      : CCM_NODE_IPAM.includes(provider));
  return {
    routes: routesOn && (kind === 'cloud-controller-manager' || (inTreeLoops && allocates)),
    nodeIpam: ipamOn ? (cloudAllocator ? 'cloud' : 'range') : undefined,
    clusterCidr: flags.get('cluster-cidr') || undefined,
  };
}

interface Container {
  name?: string;
  image?: string;
  command?: string[];
  args?: string[];
}

/**
 * Whether `--controllers` (a comma list; absent: the default `*`) enables `name` (or any of its names: a
 * controller and its alias), as k8s.io/controller-manager's IsControllerEnabled reads it: the first
 * explicit `name` or `-name` wins, else `*` enables it (none of the cloud controllers is off by default).
 */
export function controllerEnabled(
  controllers: string | undefined,
  name: string | readonly string[],
): boolean {
  const names = typeof name === 'string' ? [name] : name;
  let star = false;
  for (const item of (controllers ?? '*').split(',').map((c) => c.trim())) {
    if (names.includes(item)) return true;
    if (names.some((n) => item === `-${n}`)) return false;
    if (item === '*') star = true;
  }
  return star;
}

function imageMinor(image: string | undefined): number | undefined {
  const m = /:v1\.(\d+)(?:\.|$|-)/.exec(image ?? '');
  return m ? Number(m[1]) : undefined;
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
      nodeLifecycle: controllerEnabled(flags.get('controllers'), [
        'cloud-node-lifecycle',
        'cloud-node-lifecycle-controller',
      ]),
      leaderElect: flagIsTrue(flags, 'leader-elect', true),
      leaderMigration: flagIsTrue(flags, 'enable-leader-migration', false),
      concurrentNodeSyncs: syncs > 0 ? syncs : 1,
      network: networkLoops(kind, flags, provider, isKcm && cloudLoops),
      minor: imageMinor(container.image),
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
