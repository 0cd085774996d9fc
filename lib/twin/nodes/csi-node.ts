/**
 * The CSINode a kubelet keeps for its Node (storage.k8s.io/v1), as pkg/volume/csi/nodeinfomanager does:
 * created at the kubelet's start, named after the Node and owned by it (the garbage collector deletes it
 * with the Node), annotated with the in-tree plugins whose calls the kubelet sends to CSI drivers, and
 * given one entry per CSI driver whose node plugin registered with this kubelet (installDriverToCSINode).
 * A node group's `csiDrivers` are the node plugins its hosts run (a DaemonSet on a real cluster); they
 * register again at every kubelet start, as a real plugin does through the kubelet's plugin watcher.
 */
import type { ClusterStore, KubeObject } from '../store.ts';

const CSI_NODES = 'csinodes.storage.k8s.io';

/** v1.MigratedPluginsAnnotationKey (k8s.io/api core/v1 annotation_key_constants.go). */
export const MIGRATED_PLUGINS = 'storage.alpha.kubernetes.io/migrated-plugins';

/**
 * The in-tree plugins the kubelet's CSI plugin lists as migrated (pkg/volume/csi/csi_plugin.go
 * `migratedPlugins`): on 1.25 through their CSIMigration<Provider> gates, every one of them on by default
 * (GA and locked for EBS, GCE PD, Azure Disk and Cinder; beta and on for Azure File and vSphere), from 1.27
 * unconditionally. Portworx and RBD stay off by default and are left out. Sorted, as setMigrationAnnotation
 * joins them.
 */
const MIGRATED = [
  'kubernetes.io/aws-ebs',
  'kubernetes.io/azure-disk',
  'kubernetes.io/azure-file',
  'kubernetes.io/cinder',
  'kubernetes.io/gce-pd',
  'kubernetes.io/vsphere-volume',
].join(',');

interface CsiNodeDriver {
  name: string;
  nodeID: string;
  topologyKeys: string[] | null;
}

/**
 * Create the node's CSINode if it has none, and add each of `drivers` it does not list (nodeID: the
 * instance id; each real driver's NodeGetInfo answers its own form). Drivers registered by someone else
 * are kept, and none is removed: a node plugin that goes away deregisters itself.
 */
export function registerCsiDrivers(
  store: ClusterStore,
  node: KubeObject,
  drivers: readonly string[],
  nodeID: string,
): void {
  const name = node.metadata.name;
  const existing =
    store.tryGet(CSI_NODES, undefined, name) ??
    store.create(CSI_NODES, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: {
        name,
        annotations: { [MIGRATED_PLUGINS]: MIGRATED },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata.uid ?? '' }],
      },
      // What a real server answers for the kubelet's empty list (stored as protobuf, it reads back nil).
      spec: { drivers: null },
    });
  const spec = (existing.spec ?? {}) as { drivers?: CsiNodeDriver[] | null };
  const listed = spec.drivers ?? [];
  const missing = drivers.filter((d) => !listed.some((l) => l.name === d));
  if (missing.length === 0) return;
  store.update(CSI_NODES, {
    ...structuredClone(existing),
    // No topology keys: what the kubelet's empty list reads back as from a real server.
    spec: { drivers: [...listed, ...missing.map((d) => ({ name: d, nodeID, topologyKeys: null }))] },
  });
}
