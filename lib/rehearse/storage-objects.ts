/**
 * The storage a snapshot copies (issue 18's inventory, read the same way): PersistentVolumes and their
 * claims, StorageClasses, CSIDrivers and VolumeAttachments as spec objects, with the status the migration
 * checks (a Bound volume and claim, an attached attachment) and none of what the API server allocated;
 * and each node's registered CSI drivers (its CSINode), which the twin's kubelets register from their node
 * group's `csiDrivers`. Volumes hold no Secret data; a Secret a volume names (CSI's secret refs) is named
 * only, as every Secret of a snapshot.
 */
import type { KubeClients } from '../kube/clients.ts';
import { call } from '../kube/errors.ts';
import { portable } from './portable.ts';

export interface StorageSnapshot {
  readonly objects: Record<string, unknown>[];
  /** By node: the CSI drivers its kubelet registered, sorted. */
  readonly drivers: ReadonlyMap<string, string[]>;
}

/** A claimRef as its owner wrote it: uid and resourceVersion are the API server's. */
function claimRef(
  ref: { apiVersion?: string; kind?: string; namespace?: string; name?: string } | undefined,
) {
  return ref && { apiVersion: ref.apiVersion, kind: ref.kind, namespace: ref.namespace, name: ref.name };
}

export async function storageSnapshot(clients: KubeClients): Promise<StorageSnapshot> {
  const [volumes, claims, classes, drivers, attachments, csiNodes] = await Promise.all([
    call('list PersistentVolumes', () => clients.core.listPersistentVolume()),
    call('list PersistentVolumeClaims', () => clients.core.listPersistentVolumeClaimForAllNamespaces()),
    call('list StorageClasses', () => clients.storage.listStorageClass()),
    call('list CSIDrivers', () => clients.storage.listCSIDriver()),
    call('list VolumeAttachments', () => clients.storage.listVolumeAttachment()),
    call('list CSINodes', () => clients.storage.listCSINode()),
  ]);
  const namespaces = [...new Set(claims.items.map((c) => c.metadata?.namespace as string))].filter(
    (ns) => ns !== 'default' && ns !== 'kube-system',
  );
  const objects: Record<string, unknown>[] = [
    ...namespaces.map((ns) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })),
    ...classes.items.map(({ metadata, apiVersion, kind, ...fields }) =>
      portable('storage.k8s.io/v1', 'StorageClass', { metadata }, fields),
    ),
    ...drivers.items.map((d) => portable('storage.k8s.io/v1', 'CSIDriver', d, { spec: d.spec })),
    ...volumes.items.map((v) =>
      portable('v1', 'PersistentVolume', v, {
        spec: { ...v.spec, claimRef: claimRef(v.spec?.claimRef) },
        status: { phase: v.status?.phase },
      }),
    ),
    ...claims.items.map((c) =>
      portable('v1', 'PersistentVolumeClaim', c, {
        spec: c.spec,
        status: { phase: c.status?.phase, accessModes: c.status?.accessModes, capacity: c.status?.capacity },
      }),
    ),
    ...attachments.items.map((a) =>
      portable('storage.k8s.io/v1', 'VolumeAttachment', a, {
        spec: a.spec,
        status: { attached: a.status?.attached ?? false },
      }),
    ),
  ];
  const registered = new Map(
    csiNodes.items.map((n) => [
      n.metadata?.name as string,
      (n.spec?.drivers ?? []).map((d) => d.name).sort(),
    ]),
  );
  return { objects: withoutUndefined(objects), drivers: registered };
}

/** The client's models carry absent fields as undefined: a spec writes none of them. */
function withoutUndefined<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
