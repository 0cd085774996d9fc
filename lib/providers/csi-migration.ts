/**
 * Which CSI driver serves each in-tree volume plugin once CSI migration is on, per
 * k8s.io/csi-translation-lib plugins/*.go (v0.25–v0.30: the same six names throughout). CSI migration is on
 * in every version ccm-migrate moves (pkg/features/kube_features.go): CSIMigrationAWS, GCE, AzureDisk and
 * OpenStack GA and locked on from 1.25 (OpenStack's gate gone in 1.26), AzureFile beta and on in 1.25, GA
 * in 1.26, vSphere beta and on in 1.25, GA in 1.26, locked from 1.27; from 1.27 the kubelet migrates all
 * six unconditionally (pkg/volume/csi/csi_plugin.go). So every in-tree volume is attached and mounted by its
 * CSI driver before, during and after the move, and the external CCM carries no volume code at all: the
 * driver must be installed (its CSIDriver object) and registered (its node plugin, in the CSINode) on every
 * node that mounts such a volume or may get one. InTreePlugin<X>Unregister (alpha, off in 1.25–1.30) only
 * removes the in-tree plugin's code; it changes nothing of that.
 */

export interface InTreeVolumePlugin {
  /** The in-tree plugin name, also a StorageClass provisioner (`kubernetes.io/aws-ebs`). */
  readonly plugin: string;
  /** The PersistentVolume source field that names it (`spec.awsElasticBlockStore`). */
  readonly source: string;
  /** The CSI driver csi-translation-lib translates it to. */
  readonly driver: string;
}

export const IN_TREE_VOLUME_PLUGINS: readonly InTreeVolumePlugin[] = [
  { plugin: 'kubernetes.io/aws-ebs', source: 'awsElasticBlockStore', driver: 'ebs.csi.aws.com' },
  { plugin: 'kubernetes.io/gce-pd', source: 'gcePersistentDisk', driver: 'pd.csi.storage.gke.io' },
  { plugin: 'kubernetes.io/azure-disk', source: 'azureDisk', driver: 'disk.csi.azure.com' },
  { plugin: 'kubernetes.io/azure-file', source: 'azureFile', driver: 'file.csi.azure.com' },
  { plugin: 'kubernetes.io/vsphere-volume', source: 'vsphereVolume', driver: 'csi.vsphere.vmware.com' },
  { plugin: 'kubernetes.io/cinder', source: 'cinder', driver: 'cinder.csi.openstack.org' },
];

/** The in-tree plugin of a PersistentVolume spec, by its source field; undefined for any other volume. */
export function pluginOfVolume(spec: object | undefined): InTreeVolumePlugin | undefined {
  if (spec === undefined) return undefined;
  return IN_TREE_VOLUME_PLUGINS.find((p) => p.source in spec);
}

/** The in-tree plugin a StorageClass provisioner names; undefined for a CSI (or any other) provisioner. */
export function pluginOfProvisioner(provisioner: string | undefined): InTreeVolumePlugin | undefined {
  return IN_TREE_VOLUME_PLUGINS.find((p) => p.plugin === provisioner);
}
