/**
 * The cloud-node controller of a cloud-controller-manager (k8s.io/cloud-provider/controllers/node), and
 * Azure's cloud-node-manager, which runs the same initialisation for its own node only
 * (cloud-provider-azure pkg/nodemanager): each node that carries the uninitialized taint gets what the
 * cloud knows of its instance (providerID, addresses, topology and instance-type labels), then loses the
 * taint. A node whose instance is not found (or whose lookup fails) stays tainted and is retried later, as
 * the real controller logs and requeues it: it records no event for that (k8s.io/cloud-provider
 * controllers/node, whose only event is `Synced`). Workers: `--concurrent-node-syncs` of the leading CCM, plus one per node whose
 * cloud-node-manager runs; each initialisation takes `latencies.nodeInit`.
 */

import { UNINITIALIZED_TAINT } from '../../kube/well-known.ts';
import type { TwinContext } from '../context.ts';
import type { KubeObject, StoreEvent } from '../store.ts';
import { recordEvent } from './events.ts';
import type { CloudModel, Instance, NodeAddress } from './model.ts';
import { annotatedNodeIPs, narrowToNodeIPs, PROVIDED_NODE_IP } from './node-ip.ts';
import { hasUninitializedTaint, providerIDOf, type Taint } from './nodes.ts';

/**
 * The labels the cloud-node controller sets (getNodeModifiersFromCloudProvider): GA and the deprecated
 * beta keys, both still written. https://kubernetes.io/docs/reference/labels-annotations-taints/
 */
function cloudLabels(instance: Instance): Record<string, string> {
  return {
    'node.kubernetes.io/instance-type': instance.instanceType,
    'beta.kubernetes.io/instance-type': instance.instanceType,
    'topology.kubernetes.io/region': instance.region,
    'failure-domain.beta.kubernetes.io/region': instance.region,
    'topology.kubernetes.io/zone': instance.zone,
    'failure-domain.beta.kubernetes.io/zone': instance.zone,
  };
}

/** The instance behind a node: by its providerID when it has one, else by name (InstanceMetadata). */
export function instanceOf(cloud: CloudModel, node: KubeObject): Instance | undefined {
  const providerID = providerIDOf(node);
  return providerID ? cloud.instanceByProviderID(providerID) : cloud.instanceFor(node.metadata.name);
}

/**
 * The addresses the cloud-node controller of `minor` sets on a Node (updateNodeAddress): the instance's,
 * with the Node's Hostname when the cloud lists none, narrowed to the kubelet's node IP annotation; undefined
 * when that annotation is unreadable or names an address the cloud does not list (see node-ip.ts).
 */
export function ccmAddresses(instance: Instance, node: KubeObject, minor: number): NodeAddress[] | undefined {
  const current = ((node.status as { addresses?: NodeAddress[] } | undefined)?.addresses ?? []).map((a) => ({
    ...a,
  }));
  const cloud = instance.addresses.map((a) => ({ ...a }));
  if (!cloud.some((a) => a.type === 'Hostname')) cloud.push(...current.filter((a) => a.type === 'Hostname'));
  const annotation = node.metadata.annotations?.[PROVIDED_NODE_IP];
  if (annotation === undefined) return cloud;
  const ips = annotatedNodeIPs(annotation, minor);
  return ips && narrowToNodeIPs(ips, cloud);
}

/** Which side's code asks the cloud: an external CCM (or node manager), or kube-controller-manager's in-tree loops. */
export type LookupSide = 'external' | 'in-tree';

/** Why a lookup found no instance: the cloud said there is none, or refused to answer. */
export type LookupFailure = 'notFound' | 'unauthorized';

/**
 * A controller's instance lookup for a node: the instance, or why there is none, as a cloudLookupFails
 * fault makes it fail for that side.
 */
export function lookupInstance(
  ctx: TwinContext,
  cloud: CloudModel,
  node: KubeObject,
  by: LookupSide,
): Instance | LookupFailure {
  const failure = ctx.faults.cloudLookup(node.metadata.name, by);
  if (failure) return failure;
  return instanceOf(cloud, node) ?? 'notFound';
}

export interface NodeInitOptions {
  /** CCM workers allowed now: 0 while no cloud-controller-manager runs the cloud-node loop (or the API is down). */
  readonly workers: () => number;
  /** Whether the node's own cloud-node-manager runs now (and reaches the API): it needs no CCM worker. */
  readonly nodeManagerRuns: (node: string) => boolean;
  /** The minor of the k8s.io/cloud-provider the initialising controller is built with. */
  readonly minor: () => number;
}

type Initialiser = 'cloud-node-controller' | 'cloud-node-manager';

interface InFlight {
  readonly timer: NodeJS.Timeout;
  readonly by: Initialiser;
}

export class CloudNodeController {
  readonly #ctx: TwinContext;
  readonly #cloud: CloudModel;
  readonly #opts: NodeInitOptions;
  /** Tainted nodes waiting for a worker, in arrival order. */
  readonly #queue = new Set<string>();
  /** Nodes whose instance was not found: back in the queue at the next retry. */
  readonly #failed = new Set<string>();
  readonly #inFlight = new Map<string, InFlight>();

  constructor(ctx: TwinContext, cloud: CloudModel, opts: NodeInitOptions) {
    this.#ctx = ctx;
    this.#cloud = cloud;
    this.#opts = opts;
  }

  observe(event: StoreEvent): void {
    const name = event.object.metadata.name;
    if (event.type !== 'DELETED' && hasUninitializedTaint(event.object)) {
      if (!this.#inFlight.has(name) && !this.#failed.has(name)) this.#queue.add(name);
    } else {
      this.#queue.delete(name);
      this.#failed.delete(name);
    }
  }

  /** Requeue the nodes that failed, as the workqueue's rate limiter eventually does. */
  retryFailed(): void {
    for (const name of this.#failed) this.#queue.add(name);
    this.#failed.clear();
  }

  /** Start the node managers of queued nodes, and CCM workers up to the allowed number. */
  pump(): void {
    const workers = this.#opts.workers();
    let busy = [...this.#inFlight.values()].filter((f) => f.by === 'cloud-node-controller').length;
    for (const name of this.#queue) {
      if (this.#ctx.signal.aborted) return;
      const by: Initialiser = this.#opts.nodeManagerRuns(name)
        ? 'cloud-node-manager'
        : 'cloud-node-controller';
      if (by === 'cloud-node-controller') {
        if (busy >= workers) continue;
        busy++;
      }
      this.#queue.delete(name);
      const timer = setTimeout(() => {
        this.#inFlight.delete(name);
        try {
          this.#sync(name, by);
        } catch {
          // A write the store refused (the node changed or went): try this node again later.
          this.#failed.add(name);
        }
        this.pump();
      }, this.#ctx.spec.latencies.nodeInit);
      this.#inFlight.set(name, { timer, by });
    }
  }

  stop(): void {
    for (const { timer } of this.#inFlight.values()) clearTimeout(timer);
    this.#inFlight.clear();
  }

  /**
   * The cloud-node controller's status pass (UpdateNodeStatus, which wait.Until runs as the controller
   * starts, then every --node-status-update-frequency): every initialised Node whose instance the cloud
   * knows gets the addresses the controller would set, where they differ.
   */
  updateAddresses(): void {
    for (const node of this.#ctx.store.list('nodes').items) {
      if (hasUninitializedTaint(node)) continue;
      const instance = lookupInstance(this.#ctx, this.#cloud, node, 'external');
      const addresses =
        typeof instance === 'string' ? undefined : ccmAddresses(instance, node, this.#opts.minor());
      if (addresses) this.#writeAddresses(node, addresses);
    }
  }

  #writeAddresses(node: KubeObject, addresses: NodeAddress[]): void {
    const status = (node.status ?? {}) as { addresses?: NodeAddress[] };
    if (JSON.stringify(status.addresses ?? []) === JSON.stringify(addresses)) return;
    // Addresses go through the status subresource, as updateNodeAddress patches them.
    this.#ctx.store.update(
      'nodes',
      { ...structuredClone(node), status: { ...structuredClone(status), addresses } },
      { subresource: 'status' },
    );
  }

  #sync(name: string, by: Initialiser): void {
    const node = this.#ctx.store.tryGet('nodes', undefined, name);
    if (!node || !hasUninitializedTaint(node)) return;
    const stillRuns =
      by === 'cloud-node-manager' ? this.#opts.nodeManagerRuns(name) : this.#opts.workers() > 0;
    if (!stillRuns) {
      // The leader or the node manager went away mid-initialisation: the next one starts this node again.
      this.#queue.add(name);
      return;
    }
    // Both initialisers are external code: a failed lookup (not found, or an error) is retried later, and so
    // is a node IP the cloud does not list ("provided node ip for node … is not valid"): the Node keeps its taint.
    const instance = lookupInstance(this.#ctx, this.#cloud, node, 'external');
    const addresses =
      typeof instance === 'string' ? undefined : ccmAddresses(instance, node, this.#opts.minor());
    if (typeof instance === 'string' || !addresses) {
      this.#failed.add(name);
      return;
    }
    const next = structuredClone(node) as KubeObject & { spec: { providerID?: string; taints?: Taint[] } };
    next.metadata.labels = { ...next.metadata.labels, ...cloudLabels(instance) };
    next.spec.providerID ||= instance.providerID;
    const taints = (next.spec.taints ?? []).filter((t) => t.key !== UNINITIALIZED_TAINT);
    if (taints.length > 0) next.spec.taints = taints;
    else delete next.spec.taints;
    const updated = this.#ctx.store.update('nodes', next);
    this.#writeAddresses(updated, addresses);
    recordEvent(this.#ctx.store, updated, {
      type: 'Normal',
      reason: 'Synced',
      message: 'Node synced successfully',
      component: by,
    });
  }
}
