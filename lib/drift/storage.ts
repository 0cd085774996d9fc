/**
 * Drift in storage readiness (steps/storage.ts): a CSI driver that in-tree volumes need and that is no
 * longer installed, or no longer registered on a node that mounts one or may get one (its node plugin
 * gone from that node), or not used by that node's kubelet for its plugin (CSI migration turned off), and
 * in-tree StorageClasses that new claims still use. Both are warnings: nothing
 * a migration does would fix them, and what breaks is the next volume attached on that node or provisioned
 * through that class.
 */
import { call } from '../kube/errors.ts';
import type { ClusterAccess } from '../steps/cluster.ts';
import type { StorageInventory } from '../steps/storage-inventory.ts';
import type { Finding } from './findings.ts';

/** The StorageClasses named by claims not bound yet (Pending): what new claims use. */
export async function pendingClaimClasses(ctx: ClusterAccess, inv: StorageInventory): Promise<string[]> {
  if (inv.inTreeClasses.length === 0) return [];
  const claims = await call('list persistent volume claims', () =>
    ctx.clients.core.listPersistentVolumeClaimForAllNamespaces(),
  );
  return claims.items
    .filter((c) => (c.status?.phase ?? 'Pending') === 'Pending' && c.spec?.storageClassName)
    .map((c) => c.spec?.storageClassName ?? '');
}

export function storageFindings(inv: StorageInventory, pendingClasses: readonly string[]): Finding[] {
  const serves = (driver: string) => {
    const volumes = inv.volumes.filter((v) => v.driver === driver).map((v) => v.name);
    return volumes.length > 0 ? `in-tree volumes ${volumes.join(', ')}` : 'in-tree StorageClasses';
  };
  const drivers = inv.drivers.flatMap((d): Finding[] => [
    ...(d.installed
      ? []
      : [
          {
            kind: 'csi-driver-missing' as const,
            object: `CSIDriver ${d.driver}`,
            expected: `installed: it serves ${serves(d.driver)}`,
            seen: 'not found',
            severity: 'warning' as const,
          },
        ]),
    ...d.unregisteredOn.map((node) => ({
      kind: 'csi-driver-missing' as const,
      object: `CSINode ${node}`,
      expected: `${d.driver} registered (its node plugin running): it serves ${serves(d.driver)}`,
      seen: 'not registered',
      severity: 'warning' as const,
    })),
    ...d.notMigratedOn.map((node) => ({
      kind: 'csi-driver-missing' as const,
      object: `CSINode ${node}`,
      expected: `the kubelet handing its in-tree plugin to ${d.driver} (CSI migration): it serves ${serves(d.driver)}`,
      seen: 'not in storage.alpha.kubernetes.io/migrated-plugins',
      severity: 'warning' as const,
    })),
  ]);
  const classes = inv.inTreeClasses
    .filter((c) => c.isDefault || pendingClasses.includes(c.name))
    .map((c): Finding => {
      const instead = inv.csiClasses.filter((x) => x.driver === c.driver).map((x) => x.name);
      return {
        kind: 'in-tree-storage-class',
        object: `StorageClass ${c.name}`,
        expected: `new claims on a CSI StorageClass: ${instead.length > 0 ? instead.join(' or ') : `one with provisioner ${c.driver} (none yet)`}`,
        seen: `provisioner ${c.plugin}, ${c.isDefault ? 'the default class' : 'named by claims waiting for a volume'}`,
        severity: 'warning',
      };
    });
  return [...drivers, ...classes];
}
