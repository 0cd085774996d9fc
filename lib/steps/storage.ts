/**
 * Storage readiness: the in-tree volumes and StorageClasses a cluster holds, and whether the CSI driver that
 * serves each (providers/csi-migration.ts) is installed (its CSIDriver object) and registered with the
 * kubelet (its entry in the node's CSINode, which the kubelet writes when the driver's node plugin
 * registers: pkg/volume/csi/nodeinfomanager) on every node that mounts such a volume and every node where
 * a new one could be scheduled. Preflight refuses a missing driver, plan prints the inventory, verify holds
 * the bound volumes to it, and drift reports a registration lost since.
 */
import type {
  V1CSINode,
  V1Node,
  V1PersistentVolume,
  V1StorageClass,
  V1VolumeAttachment,
} from '@kubernetes/client-node';
import { call } from '../kube/errors.ts';
import { UNINITIALIZED_TAINT } from '../kube/well-known.ts';
import { IN_TREE_VOLUME_PLUGINS, pluginOfProvisioner, pluginOfVolume } from '../providers/csi-migration.ts';
import type { ClusterAccess } from './cluster.ts';
import { nodeName } from './cluster.ts';
import { listOf } from './list-of.ts';
import type { StorageInventory, StorageVolume } from './storage-inventory.ts';

/** What the inventory is built from: the objects as listed. */
export interface StorageObjects {
  readonly nodes: readonly V1Node[];
  readonly volumes: readonly V1PersistentVolume[];
  readonly classes: readonly V1StorageClass[];
  readonly csiDrivers: readonly string[];
  readonly csiNodes: readonly V1CSINode[];
  readonly attachments: readonly V1VolumeAttachment[];
}

const DEFAULT_CLASS = 'storageclass.kubernetes.io/is-default-class';
/** v1.MigratedPluginsAnnotationKey: the in-tree plugins the kubelet sends to CSI (nodeinfomanager). */
const MIGRATED_PLUGINS = 'storage.alpha.kubernetes.io/migrated-plugins';

/**
 * Where a pod with a new in-tree volume could land: not cordoned, and no NoSchedule or NoExecute taint
 * other than the uninitialized one (a node the CCM is about to initialise takes pods again in seconds).
 */
function schedulable(node: V1Node): boolean {
  if (node.spec?.unschedulable) return false;
  return !(node.spec?.taints ?? []).some(
    (t) => t.key !== UNINITIALIZED_TAINT && (t.effect === 'NoSchedule' || t.effect === 'NoExecute'),
  );
}

function claimOf(pv: V1PersistentVolume): string | undefined {
  const ref = pv.spec?.claimRef;
  return ref?.name ? `${ref.namespace ?? ''}/${ref.name}` : undefined;
}

/** The inventory of what `objects` hold. Pure. */
export function storageInventory(objects: StorageObjects): StorageInventory {
  const volumes = objects.volumes.flatMap((pv): StorageVolume[] => {
    const plugin = pluginOfVolume(pv.spec);
    if (!plugin) return [];
    const name = pv.metadata?.name ?? '';
    const claim = claimOf(pv);
    return [
      {
        name,
        plugin: plugin.plugin,
        driver: plugin.driver,
        ...(claim ? { claim } : {}),
        phase: pv.status?.phase ?? 'Pending',
        attachedTo: objects.attachments
          .filter((va) => va.spec.source.persistentVolumeName === name && va.status?.attached)
          .map((va) => va.spec.nodeName)
          .sort(),
      },
    ];
  });
  const inTreeClasses = objects.classes.flatMap((sc) => {
    const plugin = pluginOfProvisioner(sc.provisioner);
    if (!plugin) return [];
    const isDefault = sc.metadata?.annotations?.[DEFAULT_CLASS] === 'true';
    return [{ name: sc.metadata?.name ?? '', plugin: plugin.plugin, driver: plugin.driver, isDefault }];
  });
  const needed = [...new Set([...volumes, ...inTreeClasses].map((v) => v.driver))].sort();
  const registered = new Map(
    // A CSINode without drivers comes back from a real server with `drivers: null`.
    objects.csiNodes.map((n) => [n.metadata?.name ?? '', new Set((n.spec.drivers ?? []).map((d) => d.name))]),
  );
  const migrated = new Map(
    objects.csiNodes.map((n) => [
      n.metadata?.name ?? '',
      (n.metadata?.annotations?.[MIGRATED_PLUGINS] ?? '').split(','),
    ]),
  );
  const newVolumesGo = objects.nodes.filter(schedulable).map(nodeName);
  const drivers = needed.map((driver) => {
    const mounting = volumes.filter((v) => v.driver === driver).flatMap((v) => v.attachedTo);
    const nodes = [...new Set([...mounting, ...newVolumesGo])].sort();
    const plugins = IN_TREE_VOLUME_PLUGINS.filter((p) => p.driver === driver).map((p) => p.plugin);
    return {
      driver,
      installed: objects.csiDrivers.includes(driver),
      unregisteredOn: nodes.filter((n) => !registered.get(n)?.has(driver)),
      // A node without a CSINode is counted unregistered already: only a kubelet's own word counts here.
      notMigratedOn: nodes.filter((n) => {
        const listed = migrated.get(n);
        return listed !== undefined && !plugins.every((p) => listed.includes(p));
      }),
    };
  });
  const csiClasses = objects.classes
    .filter((sc) => needed.includes(sc.provisioner))
    .map((sc) => ({ name: sc.metadata?.name ?? '', driver: sc.provisioner }));
  return { volumes, inTreeClasses, csiClasses, drivers };
}

/**
 * Read the cluster's storage: PersistentVolumes and StorageClasses, and only when one of them is in-tree
 * the CSIDrivers, CSINodes and VolumeAttachments (two lists on a cluster without in-tree storage).
 */
export async function observeStorage(
  ctx: ClusterAccess,
  nodes: readonly V1Node[],
): Promise<StorageInventory> {
  const { core, storage } = ctx.clients;
  const [volumes, classes] = await Promise.all([
    call('list persistent volumes', () => core.listPersistentVolume()),
    call('list storage classes', () => storage.listStorageClass()),
  ]);
  const inTree =
    volumes.items.some((pv) => pluginOfVolume(pv.spec)) ||
    classes.items.some((sc) => pluginOfProvisioner(sc.provisioner));
  if (!inTree)
    return storageInventory({
      nodes,
      volumes: [],
      classes: [],
      csiDrivers: [],
      csiNodes: [],
      attachments: [],
    });
  const [csiDrivers, csiNodes, attachments] = await Promise.all([
    call('list CSI drivers', () => storage.listCSIDriver()),
    call('list CSI nodes', () => storage.listCSINode()),
    call('list volume attachments', () => storage.listVolumeAttachment()),
  ]);
  return storageInventory({
    nodes,
    volumes: volumes.items,
    classes: classes.items,
    csiDrivers: csiDrivers.items.map((d) => d.metadata?.name ?? ''),
    csiNodes: csiNodes.items,
    attachments: attachments.items,
  });
}

/**
 * Each needed driver that is not installed, not registered everywhere, or not used by a kubelet for its
 * plugin, in words; empty when none.
 */
export function missingCsiDrivers(inv: StorageInventory): string[] {
  return inv.drivers
    .filter((d) => !d.installed || d.unregisteredOn.length > 0 || d.notMigratedOn.length > 0)
    .map((d) => {
      const volumes = inv.volumes.filter((v) => v.driver === d.driver).map((v) => v.name);
      const classes = inv.inTreeClasses.filter((c) => c.driver === d.driver).map((c) => c.name);
      const serves = [
        volumes.length > 0 ? `volumes ${listOf(volumes)}` : undefined,
        classes.length > 0 ? `StorageClasses ${listOf(classes)}` : undefined,
      ].filter(Boolean);
      const why = [
        d.installed ? undefined : 'no CSIDriver object',
        d.unregisteredOn.length > 0
          ? `not registered in the CSINode of ${listOf(d.unregisteredOn)}`
          : undefined,
        d.notMigratedOn.length > 0
          ? `CSI migration off in the kubelet of ${listOf(d.notMigratedOn)}, as its CSINode's ${MIGRATED_PLUGINS} says`
          : undefined,
      ].filter(Boolean);
      return `${d.driver} (${why.join('; ')}), which serves in-tree ${serves.join(' and ')}`;
    });
}

/** The inventory in words, one line each (plan, progress): what serves each volume after the move. */
export function describeStorage(inv: StorageInventory): string[] {
  if (inv.volumes.length === 0 && inv.inTreeClasses.length === 0)
    return ['no in-tree volumes or StorageClasses'];
  const ready = (driver: string) => {
    const d = inv.drivers.find((x) => x.driver === driver);
    const ok = d?.installed && d.unregisteredOn.length === 0 && d.notMigratedOn.length === 0;
    return ok ? 'ready' : 'MISSING';
  };
  return [
    ...inv.volumes.map(
      (v) =>
        `volume ${v.name} (${v.plugin}, ${v.phase}${v.claim ? ` to ${v.claim}` : ''}${v.attachedTo.length > 0 ? `, attached to ${v.attachedTo.join(', ')}` : ''}): served by ${v.driver} (${ready(v.driver)}) before and after the move`,
    ),
    ...inv.inTreeClasses.map(
      (c) =>
        `StorageClass ${c.name}${c.isDefault ? ' (default)' : ''} (${c.plugin}): new volumes provisioned by ${c.driver} (${ready(c.driver)})`,
    ),
  ];
}

/** How the volumes bound at preflight differ now: a claim lost, or an attachment gone. */
export function lostVolumes(before: StorageInventory, now: StorageInventory): string[] {
  const current = new Map(now.volumes.map((v) => [v.name, v]));
  return before.volumes
    .filter((v) => v.phase === 'Bound')
    .flatMap((v) => {
      const seen = current.get(v.name);
      if (!seen) return [`volume ${v.name} is gone`];
      if (seen.phase !== 'Bound' || seen.claim !== v.claim) {
        return [
          `volume ${v.name} is ${seen.phase}${seen.claim ? ` to ${seen.claim}` : ''}, was Bound to ${v.claim}`,
        ];
      }
      return v.attachedTo
        .filter((n) => !seen.attachedTo.includes(n))
        .map((n) => `volume ${v.name} is no longer attached to ${n}`);
    });
}
