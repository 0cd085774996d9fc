/**
 * The resource types the twin serves, with the facts the API server needs about each: where it lives
 * (group/version), its names, whether it is namespaced, which subresources it has.
 * Source of truth for discovery, routing and storage keys.
 */

export interface ResourceType {
  /** API group, '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly listKind: string;
  /** Lower-case plural used in URLs. */
  readonly plural: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  /** Subresources served: 'status', and 'scale' (Deployments). */
  readonly subresources: readonly string[];
  /** Verbs advertised in discovery. */
  readonly verbs: readonly string[];
  /** Whether an update of `spec` bumps metadata.generation (true for types with a spec). */
  readonly hasSpec: boolean;
}

const ALL_VERBS = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
] as const;

function type(
  group: string,
  version: string,
  kind: string,
  plural: string,
  opts: { namespaced: boolean; shortNames?: string[]; status?: boolean; scale?: boolean; hasSpec?: boolean },
): ResourceType {
  return {
    group,
    version,
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    namespaced: opts.namespaced,
    shortNames: opts.shortNames ?? [],
    subresources: [...(opts.status ? ['status'] : []), ...(opts.scale ? ['scale'] : [])],
    verbs: ALL_VERBS,
    hasSpec: opts.hasSpec ?? opts.status ?? false,
  };
}

export const RESOURCE_TYPES: readonly ResourceType[] = [
  type('', 'v1', 'Namespace', 'namespaces', { namespaced: false, shortNames: ['ns'], status: true }),
  type('', 'v1', 'Node', 'nodes', { namespaced: false, shortNames: ['no'], status: true }),
  type('', 'v1', 'Pod', 'pods', { namespaced: true, shortNames: ['po'], status: true }),
  type('', 'v1', 'ConfigMap', 'configmaps', { namespaced: true, shortNames: ['cm'] }),
  type('', 'v1', 'Secret', 'secrets', { namespaced: true }),
  type('', 'v1', 'ServiceAccount', 'serviceaccounts', { namespaced: true, shortNames: ['sa'] }),
  type('', 'v1', 'Service', 'services', { namespaced: true, shortNames: ['svc'], status: true }),
  type('', 'v1', 'Event', 'events', { namespaced: true, shortNames: ['ev'] }),
  type('', 'v1', 'PersistentVolume', 'persistentvolumes', {
    namespaced: false,
    shortNames: ['pv'],
    status: true,
  }),
  type('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', {
    namespaced: true,
    shortNames: ['pvc'],
    status: true,
  }),
  type('apps', 'v1', 'Deployment', 'deployments', {
    namespaced: true,
    shortNames: ['deploy'],
    status: true,
    scale: true,
  }),
  type('apps', 'v1', 'DaemonSet', 'daemonsets', { namespaced: true, shortNames: ['ds'], status: true }),
  type('batch', 'v1', 'Job', 'jobs', { namespaced: true, status: true }),
  type('coordination.k8s.io', 'v1', 'Lease', 'leases', { namespaced: true, hasSpec: true }),
  type('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', { namespaced: false }),
  type('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', { namespaced: false }),
  type('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', { namespaced: true }),
  type('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', { namespaced: true }),
  type('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', {
    namespaced: true,
    shortNames: ['pdb'],
    status: true,
  }),
  // storage.k8s.io/v1 (k8s.io/api storage/v1 types.go): a StorageClass has no spec, its fields are top-level.
  type('storage.k8s.io', 'v1', 'StorageClass', 'storageclasses', { namespaced: false, shortNames: ['sc'] }),
  type('storage.k8s.io', 'v1', 'CSIDriver', 'csidrivers', { namespaced: false, hasSpec: true }),
  type('storage.k8s.io', 'v1', 'CSINode', 'csinodes', { namespaced: false, hasSpec: true }),
  type('storage.k8s.io', 'v1', 'VolumeAttachment', 'volumeattachments', { namespaced: false, status: true }),
];

/** `apiVersion` as written in objects: `v1` for the core group, `group/version` otherwise. */
export function apiVersionOf(t: Pick<ResourceType, 'group' | 'version'>): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

/** Storage key of a resource type: `plural.group` (`pods`, `deployments.apps`). */
export function typeKey(t: Pick<ResourceType, 'group' | 'plural'>): string {
  return t.group === '' ? t.plural : `${t.plural}.${t.group}`;
}

const byKey = new Map(RESOURCE_TYPES.map((t) => [typeKey(t), t]));
const byKind = new Map(RESOURCE_TYPES.map((t) => [`${apiVersionOf(t)}/${t.kind}`, t]));

/** The type served at `/api(s)/<group>/<version>/.../<plural>`, if any. */
export function findByPlural(group: string, version: string, plural: string): ResourceType | undefined {
  const t = byKey.get(group === '' ? plural : `${plural}.${group}`);
  return t && t.version === version ? t : undefined;
}

/** The type of an object by its `apiVersion` and `kind`, if the twin serves it. */
export function findByKind(apiVersion: string, kind: string): ResourceType | undefined {
  return byKind.get(`${apiVersion}/${kind}`);
}

/** The type by its storage key (`pods`, `deployments.apps`); throws for an unknown key (a programming error). */
export function resourceType(key: string): ResourceType {
  const t = byKey.get(key);
  if (!t) throw new Error(`unknown resource type ${key}`);
  return t;
}
