/**
 * The shape of the storage inventory (storage.ts builds it): zod only, so that what carries it (the run's
 * snapshot, a drift report) does not bundle the Kubernetes client into functions that never reach a cluster.
 */
import * as z from 'zod';

export const StorageVolumeSchema = z.object({
  /** The PersistentVolume. */
  name: z.string(),
  /** Its in-tree plugin (`kubernetes.io/aws-ebs`) and the CSI driver that serves it. */
  plugin: z.string(),
  driver: z.string(),
  /** `namespace/name` of the claim it is bound to (spec.claimRef). */
  claim: z.string().optional(),
  /** status.phase: Bound, Available, Released… */
  phase: z.string(),
  /** Nodes a VolumeAttachment says it is attached to. */
  attachedTo: z.array(z.string()),
});
export type StorageVolume = z.infer<typeof StorageVolumeSchema>;

export const StorageInventorySchema = z.object({
  volumes: z.array(StorageVolumeSchema),
  /** StorageClasses with an in-tree provisioner. */
  inTreeClasses: z.array(
    z.object({ name: z.string(), plugin: z.string(), driver: z.string(), isDefault: z.boolean() }),
  ),
  /** StorageClasses whose provisioner is one of the drivers needed: what new claims should name instead. */
  csiClasses: z.array(z.object({ name: z.string(), driver: z.string() })),
  /** Each CSI driver the in-tree volumes and classes need. */
  drivers: z.array(
    z.object({
      driver: z.string(),
      /** Its CSIDriver object exists. */
      installed: z.boolean(),
      /** Nodes that mount one of its volumes or may get one, whose CSINode does not list it. */
      unregisteredOn: z.array(z.string()),
      /**
       * Of those nodes, the ones whose kubelet does not hand the in-tree plugin to CSI (its CSINode's
       * migrated-plugins annotation lacks it: CSIMigration<X> turned off, possible for Azure File and vSphere
       * on 1.25 and 1.26): their volumes stay with the in-tree plugin, which needs the in-tree cloud.
       */
      notMigratedOn: z.array(z.string()),
    }),
  ),
});
export type StorageInventory = z.infer<typeof StorageInventorySchema>;
