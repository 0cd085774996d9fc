/**
 * The twin's cloud controllers: kube-controller-manager's cloud loops (while a KCM with an in-tree
 * `--cloud-provider` leads), external cloud-controller-managers (any Ready pod with a
 * `cloud-controller-manager` container for the cloud's provider; node initialisation only when its
 * `--controllers` keeps `cloud-node`) and per-node cloud-node-managers (Azure's DaemonSet: a Ready pod with
 * a `cloud-node-manager` container initialises the node it runs on). They meet the cluster only through the
 * store: controller pods and their readiness come from the kubelets, leadership from Leases, and the
 * loops (node initialisation, node lifecycle, load balancers, node IPAM, routes) write Nodes, Services,
 * Events and the cloud's route table.
 * One timer (the leader election retry period) drives renewals, retries and the lifecycle pass; pod,
 * node and service events drive the rest.
 */
import type { TwinContext } from '../context.ts';
import type { Provider } from '../spec.ts';
import type { KubeObject, StoreEvent } from '../store.ts';
import { kubernetesMinor } from '../workloads/objects.ts';
import { controllerCandidate, nodeManagerNode, podReady } from './candidates.ts';
import { electionTimings, LeaderElection, type Participant } from './leader-election.ts';
import type { CloudModel } from './model.ts';
import { CloudNodeController } from './node-init.ts';
import { allocatePodCidrs } from './node-ipam.ts';
import { CloudNodeLifecycleController } from './node-lifecycle.ts';
import { reconcileRoutes } from './routes.ts';
import { ServiceController } from './services.ts';

export interface ActiveController {
  readonly kind: 'kube-controller-manager' | 'cloud-controller-manager';
  readonly pod: string;
  readonly namespace: string;
  readonly node: string;
  readonly provider: Provider;
  /** Runs with --enable-leader-migration: it runs the cloud loops only while it holds the migration lease. */
  readonly leaderMigration: boolean;
}

export interface CloudControllers {
  /** The controller processes running the cloud loops now. */
  active(): readonly ActiveController[];
  /** The controller processes running node IPAM now (two would hand out ranges against each other). */
  nodeIpams(): readonly ActiveController[];
  /**
   * Whether something initialises this node now, were it tainted: a leading CCM whose loops include
   * cloud-node, or the node's own Ready cloud-node-manager.
   */
  initialises(node: string): boolean;
  /** Of these (tainted) nodes, those nothing would initialise now: the CCM is looked up once for all. */
  uninitialisable(nodes: Iterable<string>): string[];
  stop(): Promise<void>;
}

function objectKey(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

function isApiServerPod(pod: KubeObject): boolean {
  const containers = (pod.spec as { containers?: { name?: string }[] } | undefined)?.containers ?? [];
  return pod.metadata.namespace === 'kube-system' && containers.some((c) => c.name === 'kube-apiserver');
}

function signature(runners: readonly Participant[]): string {
  return runners
    .map((p) => p.identity)
    .sort()
    .join(',');
}

/** Run `fn` soon, once for a burst of triggers, and outside the store's event dispatch. */
function coalesced(fn: () => void): { trigger(): void; cancel(): void } {
  let pending: NodeJS.Timeout | undefined;
  return {
    trigger: () => {
      pending ??= setTimeout(() => {
        pending = undefined;
        fn();
      }, 0);
    },
    cancel: () => clearTimeout(pending),
  };
}

export function startCloudControllers(ctx: TwinContext, cloud: CloudModel): CloudControllers {
  const { store } = ctx;
  const timings = electionTimings(ctx.spec.latencies.leaseDuration);
  const election = new LeaderElection(store, timings, (node) => cloud.placement(node)?.hostname);
  /** Ready kube-apiserver pods: without one, no controller reaches the API. */
  const apiServers = new Set<string>();
  const apiUp = (): boolean => apiServers.size > 0 && !ctx.faults.apiOutageAt();

  /** Ready cloud-node-manager pods (by pod key) and the node each initialises; and how many per node. */
  const nodeManagers = new Map<string, string>();
  const managersOn = new Map<string, number>();
  const hasNodeManager = (node: string): boolean => (managersOn.get(node) ?? 0) > 0;
  const countManager = (node: string | undefined, delta: number): void => {
    if (node) managersOn.set(node, (managersOn.get(node) ?? 0) + delta);
  };
  /** Only a cloud-controller-manager with cloud-node initialises nodes: the in-tree KCM never removed that taint. */
  const nodeInitRunner = () =>
    election.cloudLoopRunners().find((p) => p.kind === 'cloud-controller-manager' && p.initialisesNodes);
  const clusterMinor = kubernetesMinor(ctx.spec.kubernetesVersion);
  const nodeInit = new CloudNodeController(ctx, cloud, {
    workers: () => (apiUp() ? (nodeInitRunner()?.concurrentNodeSyncs ?? 0) : 0),
    nodeManagerRuns: (node) => apiUp() && hasNodeManager(node),
    minor: () => nodeInitRunner()?.minor ?? clusterMinor,
  });
  const uninitialisable = (nodes: Iterable<string>): string[] =>
    nodeInitRunner() !== undefined ? [] : [...nodes].filter((node) => !hasNodeManager(node));
  const lifecycle = new CloudNodeLifecycleController(ctx, cloud);
  const services = new ServiceController(ctx, cloud.provider, cloud.region);
  const pendingServices = new Set<string>();
  let lastRunners = '';

  const loopsRun = (): boolean => apiUp() && election.cloudLoopRunners().length > 0;

  /** A lifecycle pass by each runner of the cloud loops that runs that controller, with its side's lookups. */
  const monitorLifecycle = (): void => {
    if (!apiUp()) return;
    for (const runner of election.cloudLoopRunners()) {
      if (runner.nodeLifecycle) {
        lifecycle.monitor(runner.kind === 'kube-controller-manager' ? 'in-tree' : 'external');
      }
    }
  };

  const syncServices = (): void => {
    if (!loopsRun()) return;
    for (const key of pendingServices) {
      pendingServices.delete(key);
      const [namespace = '', name = ''] = key.split('/');
      try {
        services.sync(namespace, name);
      } catch {
        // The Service changed under us: its next event brings it back.
      }
    }
  };

  /** A new set of leaders starts its loops from a full resync, as controllers start from their informers. */
  const onRunnersChanged = (): void => {
    for (const svc of store.list('services').items) {
      if (services.needsSync(svc)) pendingServices.add(objectKey(svc));
    }
    monitorLifecycle();
    if (apiUp() && nodeInitRunner()) nodeInit.updateAddresses();
  };

  /** Node IPAM in whichever controller managers lead with it on, then routes in the cloud loop runners. */
  const syncNetwork = (): void => {
    if (!apiUp()) return;
    allocatePodCidrs(ctx, cloud, election.leaders());
    reconcileRoutes(ctx, cloud, election.cloudLoopRunners());
  };

  const round = (): void => {
    try {
      election.reconcile(apiUp());
    } catch {
      // A lease write the store refused is retried next period, as a failed API call is.
    }
    const now = signature(election.cloudLoopRunners());
    if (now !== lastRunners) {
      lastRunners = now;
      onRunnersChanged();
    }
    syncServices();
    syncNetwork();
    nodeInit.pump();
  };

  const electionSoon = coalesced(round);
  const servicesSoon = coalesced(syncServices);
  const nodeInitSoon = coalesced(() => nodeInit.pump());
  const networkSoon = coalesced(syncNetwork);

  const onPod = (pod: KubeObject, deleted: boolean): void => {
    const key = objectKey(pod);
    if (isApiServerPod(pod)) {
      const wasUp = apiServers.size > 0;
      if (!deleted && podReady(pod) && !pod.metadata.deletionTimestamp) apiServers.add(key);
      else apiServers.delete(key);
      if (wasUp !== apiServers.size > 0) electionSoon.trigger();
    }
    if (election.observe(key, deleted ? undefined : controllerCandidate(pod, cloud.provider))) {
      electionSoon.trigger();
    }
    const managed = deleted ? undefined : nodeManagerNode(pod);
    if (managed !== nodeManagers.get(key)) {
      countManager(nodeManagers.get(key), -1);
      countManager(managed, 1);
      if (managed) nodeManagers.set(key, managed);
      else nodeManagers.delete(key);
      nodeInitSoon.trigger();
    }
  };

  const onEvent = (event: StoreEvent): void => {
    const deleted = event.type === 'DELETED';
    if (event.key === 'pods') {
      onPod(event.object, deleted);
    } else if (event.key === 'nodes') {
      nodeInit.observe(event);
      lifecycle.observe(event);
      nodeInit.pump();
      networkSoon.trigger();
    } else if (event.key === 'services' && !deleted && services.needsSync(event.object)) {
      pendingServices.add(objectKey(event.object));
      servicesSoon.trigger();
    }
  };

  const initial = (key: string): void => {
    for (const object of store.list(key).items) {
      onEvent({ type: 'ADDED', key, object, resourceVersion: store.resourceVersion });
    }
  };
  initial('pods');
  initial('nodes');
  initial('services');
  const unsubscribe = store.subscribe(onEvent);

  const timer = setInterval(() => {
    round();
    monitorLifecycle();
    // Node managers retry their own node whether or not a CCM leads.
    if (loopsRun() || (apiUp() && nodeManagers.size > 0)) {
      nodeInit.retryFailed();
      nodeInit.pump();
    }
  }, timings.retryMs);

  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    electionSoon.cancel();
    servicesSoon.cancel();
    nodeInitSoon.cancel();
    networkSoon.cancel();
    unsubscribe();
    nodeInit.stop();
  };
  ctx.signal.addEventListener('abort', stop, { once: true });

  const described = (p: Participant): ActiveController => ({
    kind: p.kind,
    pod: p.pod,
    namespace: p.namespace,
    node: p.node,
    provider: cloud.provider,
    leaderMigration: p.leaderMigration,
  });

  return {
    active: () => election.cloudLoopRunners().map(described),
    nodeIpams: () =>
      election
        .leaders()
        .filter((p) => p.network.nodeIpam)
        .map(described),
    initialises: (node) => uninitialisable([node]).length === 0,
    uninitialisable,
    stop: async () => stop(),
  };
}
