/**
 * The twin's cloud: one instance per node (unless the spec says an instance is missing), each with the
 * providerID, zone and addresses that the provider's cloud controller would report. Deterministic from
 * the spec, so the same spec always gives the same identities.
 *
 * providerID formats: ../shared/reference/PROVIDER-FACTS.md §8 (each CCM's instances code).
 */
import { createHash } from 'node:crypto';
import { type Cloud, nodeNames, type Provider, type TwinSpec } from '../spec.ts';

export interface NodeAddress {
  readonly type: 'InternalIP' | 'ExternalIP' | 'Hostname' | 'InternalDNS';
  readonly address: string;
}

export interface Instance {
  /** The cloud's own id of the instance (`i-0abc…`, a VM UUID, a name). */
  readonly id: string;
  readonly providerID: string;
  readonly region: string;
  readonly zone: string;
  readonly instanceType: string;
  /** What the cloud's instance API lists (NodeAddressesByProviderID): what a CCM reads. */
  readonly addresses: readonly NodeAddress[];
  /** What an in-tree kubelet's provider lists for its own instance (the node group's secondNic.inTree). */
  readonly inTreeAddresses: readonly NodeAddress[];
}

/** Where a node sits in the spec: its group, role, position and IP. */
export interface NodePlacement {
  readonly name: string;
  readonly group: string;
  readonly role: 'control-plane' | 'worker';
  /** Position among all nodes of the spec, from 0. */
  readonly index: number;
  readonly ip: string;
  /** The address of its second network interface, when its node group has one. */
  readonly secondNicIp?: string;
  readonly zone: string;
  /** The host's own name (the node group's hostname template), not always the Node's. */
  readonly hostname: string;
}

/**
 * A route of the cluster's route table (a VPC route table, a GCE network's routes): a node's podCIDR sent
 * to its instance, as a route controller creates it (k8s.io/cloud-provider controllers/route).
 */
export interface CloudRoute {
  readonly destinationCidr: string;
  /** The node the route was made for (cloudprovider.Route.TargetNode), and the instance behind it. */
  readonly node: string;
  readonly instanceId: string;
}

/** Clouds whose provider programs routes (Routes() answers): not vSphere's in-tree one, nor IBM's. */
const ROUTES_SUPPORTED: Record<Provider, boolean> = {
  aws: true,
  azure: true,
  gce: true,
  openstack: true,
  vsphere: false,
  ibm: false,
};

const INSTANCE_TYPES: Record<Provider, string> = {
  aws: 'm5.large',
  azure: 'Standard_D2s_v3',
  gce: 'e2-standard-2',
  vsphere: 'vsphere-vm.cpu-2.mem-8gb.os-linux',
  openstack: 'm1.medium',
  ibm: 'bx2.2x8',
};

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A UUID-shaped id derived from a seed (lower-case, as vSphere and OpenStack report them). */
function uuidFrom(seed: string): string {
  const h = digest(seed);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The IP of the n-th node: 10.0.0.10 onwards. */
export function nodeIP(index: number): string {
  const n = index + 10;
  return `10.0.${Math.floor(n / 250)}.${(n % 250) + 1}`;
}

function identity(
  cloud: Cloud,
  clusterName: string,
  node: string,
  zone: string,
): { id: string; providerID: string } {
  const seed = `${clusterName}/${node}`;
  switch (cloud.provider) {
    case 'aws': {
      const id = `i-${digest(seed).slice(0, 17)}`;
      return { id, providerID: `aws:///${zone}/${id}` };
    }
    case 'azure':
      return {
        id: node,
        providerID: `azure:///subscriptions/${uuidFrom(cloud.project)}/resourceGroups/${clusterName}/providers/Microsoft.Compute/virtualMachines/${node}`,
      };
    case 'gce':
      return { id: node, providerID: `gce://${cloud.project}/${zone}/${node}` };
    case 'vsphere': {
      const id = uuidFrom(seed);
      return { id, providerID: `vsphere://${id}` };
    }
    case 'openstack': {
      const id = uuidFrom(seed);
      return { id, providerID: `openstack:///${id}` };
    }
    case 'ibm': {
      const id = `kube-${digest(seed).slice(0, 20)}-${node}`;
      return { id, providerID: `ibm://${digest(cloud.project).slice(0, 32)}///${clusterName}/${id}` };
    }
  }
}

export class CloudModel {
  readonly provider: Provider;
  readonly region: string;
  readonly #placements = new Map<string, NodePlacement>();
  readonly #instances = new Map<string, Instance>();
  readonly #byProviderID = new Map<string, Instance>();
  readonly #spec: TwinSpec;
  /** The cluster's route table, by destination CIDR. */
  readonly #routes = new Map<string, CloudRoute>();
  /** Whether this cloud has routes to program at all. */
  readonly supportsRoutes: boolean;

  constructor(spec: TwinSpec) {
    this.#spec = spec;
    this.provider = spec.cloud.provider;
    this.region = spec.cloud.region;
    this.supportsRoutes = ROUTES_SUPPORTED[this.provider];
    for (const group of spec.nodeGroups) {
      for (const name of nodeNames(group)) this.addNode(name, group.name);
    }
  }

  /** Place a node (a spec node at start, or one that joins later) and create its instance. */
  addNode(name: string, groupName: string): NodePlacement {
    const existing = this.#placements.get(name);
    if (existing) return existing;
    const group = this.#spec.nodeGroups.find((g) => g.name === groupName);
    if (!group) throw new Error(`unknown node group ${groupName}`);
    const index = this.#placements.size;
    const zones = this.#spec.cloud.zones;
    const given = this.#spec.cloud.instances[name];
    const ip = given?.ip ?? nodeIP(index);
    const placement: NodePlacement = {
      name,
      group: group.name,
      role: group.role,
      index,
      ip,
      ...(group.secondNic ? { secondNicIp: ip.replace(/^10\.0\./, '10.1.') } : {}),
      zone: given?.zone ?? (zones[index % zones.length] as string),
      hostname: group.hostname.replaceAll('{name}', name).replaceAll('{ip-dashed}', ip.replaceAll('.', '-')),
    };
    this.#placements.set(name, placement);
    if (!this.#spec.cloud.missingInstances.includes(name)) this.#createInstance(placement);
    return placement;
  }

  placement(node: string): NodePlacement | undefined {
    return this.#placements.get(node);
  }

  placements(): NodePlacement[] {
    return [...this.#placements.values()];
  }

  /** The instance backing a node, looked up by node name (as a CCM does when a node has no providerID). */
  instanceFor(node: string): Instance | undefined {
    return this.#instances.get(node);
  }

  /** The instance a providerID names, if the cloud has it (in this region). */
  instanceByProviderID(providerID: string): Instance | undefined {
    return this.#byProviderID.get(providerID);
  }

  /** Remove a node's instance, as when a VM is deleted in the cloud. */
  deleteInstance(node: string): void {
    const instance = this.#instances.get(node);
    if (!instance) return;
    this.#instances.delete(node);
    this.#byProviderID.delete(instance.providerID);
  }

  routes(): CloudRoute[] {
    return [...this.#routes.values()];
  }

  /** Create (or replace) the route to a destination, as CreateRoute does. */
  createRoute(route: CloudRoute): void {
    this.#routes.set(route.destinationCidr, route);
  }

  deleteRoute(destinationCidr: string): void {
    this.#routes.delete(destinationCidr);
  }

  #createInstance(p: NodePlacement): void {
    const given = this.#spec.cloud.instances[p.name];
    const { id, providerID } = given?.providerID
      ? { id: given.providerID.split('/').pop() as string, providerID: given.providerID }
      : identity(this.#spec.cloud, this.#spec.name, p.name, p.zone);
    const second: NodeAddress[] = p.secondNicIp ? [{ type: 'InternalIP', address: p.secondNicIp }] : [];
    const others: NodeAddress[] = [{ type: 'Hostname', address: p.name }];
    if (this.provider === 'aws') {
      others.push({
        type: 'InternalDNS',
        address: `ip-${p.ip.replaceAll('.', '-')}.${this.region}.compute.internal`,
      });
    }
    const first: NodeAddress = { type: 'InternalIP', address: p.ip };
    const seenInTree = this.#spec.nodeGroups.find((g) => g.name === p.group)?.secondNic?.inTree !== false;
    const instance: Instance = {
      id,
      providerID,
      region: this.region,
      zone: p.zone,
      instanceType: given?.instanceType ?? INSTANCE_TYPES[this.provider],
      addresses: [first, ...second, ...others],
      inTreeAddresses: [first, ...(seenInTree ? second : []), ...others],
    };
    this.#instances.set(p.name, instance);
    this.#byProviderID.set(providerID, instance);
  }
}
