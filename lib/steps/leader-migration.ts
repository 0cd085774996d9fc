/**
 * Controller manager leader migration (KEP-2436; kubernetes.io "Migrate Replicated Control Plane To Use
 * Cloud Controller Manager"): the cloud controllers (route, service, cloud-node-lifecycle) run under one
 * shared Lease, `cloud-provider-extraction-migration`, held by either an in-tree kube-controller-manager or
 * the CCM, never both. The upstream phases, as the upgrade runs them:
 * 1. every kube-controller-manager restarted with --enable-leader-migration, provider kept;
 * 2. the CCM started with --enable-leader-migration beside them;
 * 3. kube-controller-managers moved to --cloud-provider=external WITHOUT the flag ("kube-controller-manager
 *    of version N + 1 MUST NOT have Leader Migration enabled": its leader still contends for the migration
 *    lease, cmd/kube-controller-manager/app/controllermanager.go, and would hold it running nothing);
 * 4. the flag removed from the CCM.
 * The downgrade runs them in reverse (lib/steps/restore.ts): the CCM rolled out with the flag, each
 * kube-controller-manager put back in-tree with it, the CCM stopped (its migration lease passes to the
 * controller managers' leader), and each kube-controller-manager restored without it.
 * The default configuration (since 1.22: the three controllers with component `*`) is all this needs, so no
 * LeaderMigrationConfiguration file is written.
 */
import type { KubernetesObject, V1DaemonSet, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { kubernetesMinor } from '../controlplane/cloud-flag-rules.ts';
import { booleanFlag, parseFlags, setFlags } from '../controlplane/flags.ts';
import { PreflightFailedError } from '../errors.ts';
import { commandLine } from './cluster.ts';
import type { LeaderMigrationDecision } from './schemas.ts';

export const LEADER_MIGRATION_FLAG = 'enable-leader-migration';
export const LEADER_MIGRATION_CONFIG_FLAG = 'leader-migration-config';
/** GA (and on by default for its feature gate) from 1.24. */
export const LEADER_MIGRATION_MIN_MINOR = 24;

/**
 * Whether a run hands the cloud controllers over through the migration lease, and why (preflights, plan).
 * `nodeIpamMoves`: the CCM takes node IPAM over (GCE's CloudAllocator), which the default configuration
 * does not migrate: while the CCM ran beside in-tree kube-controller-managers, both would allocate.
 */
export function decideLeaderMigration(
  kubernetesVersion: string,
  controlPlaneNodes: number,
  wanted: boolean | undefined,
  nodeIpamMoves = false,
): LeaderMigrationDecision {
  const supported = kubernetesMinor(kubernetesVersion) >= LEADER_MIGRATION_MIN_MINOR;
  if (wanted === false) return { enabled: false, reason: 'leader migration turned off by the operator' };
  if (nodeIpamMoves && supported) {
    const why =
      'node IPAM moves to the CCM, and the migration lease hands over only the route, service and cloud-node-lifecycle controllers: both would allocate node CIDRs while the CCM runs beside in-tree kube-controller-managers';
    if (wanted) throw new PreflightFailedError(`leader migration cannot be used here: ${why}`);
    return { enabled: false, reason: `${why}; the cloud controllers pass without it` };
  }
  if (!supported) {
    if (wanted) {
      throw new PreflightFailedError(
        `leader migration needs Kubernetes 1.${LEADER_MIGRATION_MIN_MINOR} or later; the cluster runs ${kubernetesVersion}`,
      );
    }
    return {
      enabled: false,
      reason: `Kubernetes ${kubernetesVersion} predates leader migration GA (1.${LEADER_MIGRATION_MIN_MINOR}): the cloud controllers pass between kube-controller-manager and the CCM without it`,
    };
  }
  if (wanted) return { enabled: true, reason: 'leader migration asked for by the operator' };
  return controlPlaneNodes > 1
    ? {
        enabled: true,
        reason: `${controlPlaneNodes} control-plane nodes: the cloud controllers are handed over under the migration lease`,
      }
    : {
        enabled: false,
        reason: 'one control-plane node: nothing to hand over between replicas, leader migration not needed',
      };
}

/** Whether a pod's controller manager runs with --enable-leader-migration. */
export function runsLeaderMigration(pod: V1Pod): boolean {
  return booleanFlag(parseFlags(commandLine(pod)), LEADER_MIGRATION_FLAG, false);
}

/**
 * The CCM's objects with its container's --enable-leader-migration on (phase 2) or off (phase 4), whether it
 * runs as a Deployment or a DaemonSet (another DaemonSet, Azure's cloud-node-manager, has no such container).
 */
export function withLeaderMigration(objects: KubernetesObject[], on: boolean): KubernetesObject[] {
  return objects.map((obj) => {
    if (obj.kind !== 'Deployment' && obj.kind !== 'DaemonSet') return obj;
    const workload = structuredClone(obj) as V1Deployment | V1DaemonSet;
    for (const container of workload.spec?.template.spec?.containers ?? []) {
      if (container.name !== 'cloud-controller-manager') continue;
      container.args = setFlags(container.args ?? [], {
        [LEADER_MIGRATION_FLAG]: on ? 'true' : null,
        [LEADER_MIGRATION_CONFIG_FLAG]: null,
      });
    }
    return workload;
  });
}
