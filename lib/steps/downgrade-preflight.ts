/**
 * The downgrade's preflight: the cluster must be external, the in-tree provider must still exist in its
 * Kubernetes version, and the upgrade run to undo must be known (its snapshot and the node backups it
 * left). Changes nothing.
 */
import {
  type CloudFlagComponent,
  cloudFlagProblem,
  isInTreeProvider,
} from '../controlplane/cloud-flag-rules.ts';
import { PreflightFailedError } from '../errors.ts';
import { inTreeTarget } from '../providers/catalog.ts';
import type { StepContext } from './context.ts';
import { KAS_MANIFEST, KCM_MANIFEST } from './edits.ts';
import { decideLeaderMigration } from './leader-migration.ts';
import { type BackupDigests, examineCluster } from './preflight.ts';
import type { DowngradePreflightResult, UpgradeOptions } from './schemas.ts';
import { recordedOriginals, type Snapshot, SnapshotSchema } from './snapshot.ts';

const COMPONENT_OF: Readonly<Record<string, CloudFlagComponent>> = {
  [KAS_MANIFEST]: 'kube-apiserver',
  [KCM_MANIFEST]: 'kube-controller-manager',
};

/**
 * Why the flags the snapshot recorded would not start at `version` (a provider removed since, a flag
 * kube-apiserver no longer takes, a gate now locked), as "node:file: reason"; empty when they would.
 */
export function restoreProblems(snapshot: Snapshot, version: string): string[] {
  return Object.entries(snapshot.files).flatMap(([node, reports]) =>
    reports.flatMap((f) => {
      const component = f.kind === 'kubelet-env' ? 'kubelet' : COMPONENT_OF[f.path];
      const problem =
        component && cloudFlagProblem(component, version, new Map(Object.entries(f.flags ?? {})));
      return problem ? [`${node}:${f.path}: ${problem}`] : [];
    }),
  );
}

/**
 * Whether a snapshot recorded a cluster on its in-tree provider: some file's --cloud-provider names one. An
 * upgrade that found the cluster external already records external flags: nothing to go back to from it.
 */
export function recordsInTree(snapshot: Snapshot): boolean {
  return Object.values(snapshot.files).some((reports) =>
    reports.some((f) => isInTreeProvider(f.flags?.['cloud-provider'] ?? '')),
  );
}

/** Backups whose digest is not what the snapshot recorded for that file, as "node:path". */
function alteredBackups(snapshot: Snapshot, backups: BackupDigests): string[] {
  return Object.entries(backups).flatMap(([node, digests]) => {
    const recorded = recordedOriginals(snapshot, node);
    return Object.entries(digests)
      .filter(([path, digest]) => path in recorded && recorded[path] !== digest)
      .map(([path]) => `${node}:${path}`);
  });
}

export async function downgradePreflight(
  event: { clusterId: string; runId: string; options: UpgradeOptions },
  ctx: StepContext,
): Promise<DowngradePreflightResult> {
  await ctx.store.begin({ clusterId: event.clusterId, runId: event.runId, kind: 'downgrade' });
  const upgrades = (await ctx.store.list(event.clusterId)).filter(
    (r) => r.kind === 'upgrade' && r.snapshot !== undefined && r.status !== 'running',
  );
  if (upgrades.length === 0) {
    throw new PreflightFailedError(
      `the run store has no finished upgrade of cluster ${event.clusterId}: a downgrade restores what an upgrade run backed up`,
    );
  }
  // A provider that was never in-tree (IBM) has no way back at all: said before anything else.
  inTreeTarget(SnapshotSchema.parse(upgrades.at(-1)?.snapshot).provider);
  // The way back is the last upgrade that changed something (that found the cluster in-tree and backed
  // its files up), never a later one that found it external already and recorded that.
  const source = upgrades.filter((r) => recordsInTree(SnapshotSchema.parse(r.snapshot))).at(-1);
  if (!source?.snapshot) {
    throw new PreflightFailedError(
      `no upgrade run of cluster ${event.clusterId} in the run store changed it: each found it external already (${upgrades.map((r) => r.runId).join(', ')}), so none backed up the in-tree files a downgrade puts back. Use the run store of the upgrade that migrated it.`,
    );
  }
  const snapshot = SnapshotSchema.parse(source.snapshot);
  // IBM never had an in-tree provider: nothing to go back to (a clear refusal before anything changes).
  const inTree = inTreeTarget(snapshot.provider);
  const exam = await examineCluster(
    ctx,
    event.runId,
    { ...event.options, provider: snapshot.provider },
    { backupsOf: source.runId },
  );
  const altered = alteredBackups(snapshot, exam.backups);
  if (altered.length > 0) {
    throw new PreflightFailedError(
      `backups of run ${source.runId} are not the originals its snapshot recorded, so they cannot be put back: ${altered.slice(0, 5).join('; ')}`,
    );
  }
  const problems = restoreProblems(snapshot, exam.kubernetesVersion);
  if (problems.length > 0) {
    throw new PreflightFailedError(
      `on Kubernetes ${exam.kubernetesVersion} the in-tree ${inTree} flags cannot come back: ${problems.slice(0, 3).join('; ')}`,
    );
  }
  const present = new Set(exam.nodes.map((n) => n.metadata?.name));
  const renamed = Object.keys(snapshot.nodes).filter(
    (name) => !present.has(name) && snapshot.nodes[name]?.providerID,
  );
  if (renamed.length > 0) {
    ctx.progress({
      step: 'downgrade-preflight',
      message: `nodes gone since run ${source.runId}: ${renamed.join(', ')}`,
    });
  }
  await ctx.store.setSnapshotOnce(event.clusterId, event.runId, source.snapshot);
  const alreadyInTree = exam.externalAlready.length === 0;
  ctx.progress({
    step: 'downgrade-preflight',
    message: alreadyInTree
      ? 'already on the in-tree provider: nothing to change'
      : `undoing upgrade run ${source.runId} (${exam.provider} ${exam.kubernetesVersion}, ${exam.nodes.length} nodes)`,
  });
  const leaderMigration = decideLeaderMigration(
    exam.kubernetesVersion,
    exam.controlPlaneNodes.length,
    event.options.leaderMigration,
    // Handing node IPAM back, the CCM would allocate beside in-tree kube-controller-managers.
    snapshot.nodeNetwork?.nodeIpam === 'cloud',
  );
  if (!alreadyInTree) {
    ctx.progress({
      step: 'downgrade-preflight',
      message: `leader migration ${leaderMigration.enabled ? 'on' : 'off'}: ${leaderMigration.reason}`,
    });
  }
  return {
    alreadyInTree,
    provider: exam.provider,
    kubernetesVersion: exam.kubernetesVersion,
    sourceRunId: source.runId,
    controlPlaneNodes: exam.controlPlaneNodes,
    kubeletOrder: [...exam.controlPlaneNodes, ...exam.workerNodes],
    leaderMigration,
  };
}
