/**
 * What the Kubernetes API types declare about their lists, for the types the twin serves. Strategic
 * merge patch reads the Go struct tags `patchStrategy`/`patchMergeKey`; server-side apply reads the
 * `+listType`/`+listMapKey` markers (k8s.io/api core/v1, apps/v1, batch/v1, policy/v1, storage/v1 types.go and
 * ObjectMeta in apimachinery). The two differ in places: container and service ports are merged by port
 * alone in SMP but keyed by port+protocol in SSA; Job conditions merge in SMP but are atomic in SSA.
 * Lists not named here are replaced by SMP and atomic for SSA (tolerations, node taints, args, rules…).
 *
 * Paths are field names joined by dots; list items do not add a segment
 * (`spec.template.spec.containers.env`).
 */
import type { ResourceType } from '../resources.ts';
import { typeKey } from '../resources.ts';

export interface ListRule {
  /** SMP: whether the list is merged (patchStrategy=merge) rather than replaced. */
  readonly smpMerge: boolean;
  /** SMP patchMergeKey; absent for merged lists of scalars. */
  readonly mergeKey?: string;
  /** SSA: `set` (listType=set), the key fields (listType=map), or `atomic`. */
  readonly ssa: 'set' | 'atomic' | readonly string[];
}

export interface PatchSchema {
  /** The rule for the list at `path`, if it is a merge list. */
  list(path: string): ListRule | undefined;
  /** Whether the object at `path` is atomic for SSA (`+structType=atomic` / `+mapType=atomic`). */
  atomic(path: string): boolean;
}

/** OpenAPI defaults of list-map key fields: SSA uses them for items that omit the key. */
export const KEY_DEFAULTS: Readonly<Record<string, unknown>> = { protocol: 'TCP' };

const byKey = (mergeKey: string, ssaKeys: readonly string[] = [mergeKey]): ListRule => ({
  smpMerge: true,
  mergeKey,
  ssa: ssaKeys,
});
const MERGED_SET: ListRule = { smpMerge: true, ssa: 'set' };
const CONDITIONS = byKey('type');

const CONTAINER: Record<string, ListRule> = {
  ports: byKey('containerPort', ['containerPort', 'protocol']),
  env: byKey('name'),
  volumeMounts: byKey('mountPath'),
  volumeDevices: byKey('devicePath'),
};

const POD_SPEC: Record<string, ListRule> = {
  volumes: byKey('name'),
  imagePullSecrets: byKey('name'),
  hostAliases: byKey('ip'),
  topologySpreadConstraints: byKey('topologyKey', ['topologyKey', 'whenUnsatisfiable']),
  schedulingGates: byKey('name'),
  resourceClaims: byKey('name'),
  ...Object.fromEntries(
    ['containers', 'initContainers', 'ephemeralContainers'].flatMap((list) => [
      [list, byKey('name')],
      ...Object.entries(CONTAINER).map(([field, rule]) => [`${list}.${field}`, rule]),
    ]),
  ),
};

const METADATA: Record<string, ListRule> = {
  'metadata.ownerReferences': byKey('uid'),
  'metadata.finalizers': MERGED_SET,
};

function prefixed(prefix: string, rules: Record<string, ListRule>): Record<string, ListRule> {
  return Object.fromEntries(Object.entries(rules).map(([path, rule]) => [`${prefix}.${path}`, rule]));
}

/** A pod template's lists, including its own metadata's. */
const TEMPLATE: Record<string, ListRule> = {
  ...prefixed('spec.template.spec', POD_SPEC),
  ...prefixed('spec.template', METADATA),
};

const LISTS: Record<string, Record<string, ListRule>> = {
  pods: {
    ...prefixed('spec', POD_SPEC),
    'status.conditions': CONDITIONS,
    'status.podIPs': byKey('ip'),
    'status.hostIPs': byKey('ip'),
  },
  nodes: {
    'spec.podCIDRs': MERGED_SET,
    'status.conditions': CONDITIONS,
    'status.addresses': CONDITIONS,
  },
  services: {
    'spec.ports': byKey('port', ['port', 'protocol']),
    'status.conditions': CONDITIONS,
  },
  namespaces: { 'status.conditions': CONDITIONS },
  serviceaccounts: { secrets: byKey('name') },
  'deployments.apps': { ...TEMPLATE, 'status.conditions': CONDITIONS },
  'daemonsets.apps': { ...TEMPLATE, 'status.conditions': CONDITIONS },
  'jobs.batch': { ...TEMPLATE, 'status.conditions': { smpMerge: true, mergeKey: 'type', ssa: 'atomic' } },
  'poddisruptionbudgets.policy': { 'status.conditions': CONDITIONS },
  // CSINodeSpec.Drivers: patchMergeKey=name, listType=map, listMapKey=name (storage/v1 types.go).
  'csinodes.storage.k8s.io': { 'spec.drivers': byKey('name') },
};

/** LabelSelector is `+structType=atomic`; Service and PodSpec selectors are `+mapType=atomic`. */
const ATOMIC: Record<string, readonly string[]> = {
  pods: ['spec.nodeSelector'],
  services: ['spec.selector'],
  'deployments.apps': ['spec.selector', 'spec.template.spec.nodeSelector'],
  'daemonsets.apps': ['spec.selector', 'spec.template.spec.nodeSelector'],
  'jobs.batch': ['spec.selector', 'spec.template.spec.nodeSelector'],
  'poddisruptionbudgets.policy': ['spec.selector'],
};

const cache = new Map<string, PatchSchema>();

/** The list and atomicity rules of one resource type. */
export function schemaFor(type: Pick<ResourceType, 'group' | 'plural'>): PatchSchema {
  const key = typeKey(type);
  let schema = cache.get(key);
  if (!schema) {
    const lists = new Map(Object.entries({ ...METADATA, ...LISTS[key] }));
    const atomic = new Set(ATOMIC[key]);
    schema = { list: (path) => lists.get(path), atomic: (path) => atomic.has(path) };
    cache.set(key, schema);
  }
  return schema;
}
