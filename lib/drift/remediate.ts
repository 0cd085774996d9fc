/**
 * Drift remediation of kubelets: on a cluster that is external, every node whose kubelet runs the in-tree
 * provider again (a node that joined later from a launch template, machine template or kubeadm join
 * config the upgrade could not edit) is flipped as the upgrade flips it. Same rules as the upgrade: the
 * upgrade's examination of the cluster (every node Ready, files parsed, flags only where ccm-migrate edits
 * them, every node an instance of the provider), a snapshot, the upgrade's flip-kubelet step at most
 * `maxUnavailable` nodes at a time (the agent backs each file up under this run's id), the upgrade's
 * verify-node on each flipped node, then its verify; a failure puts the flipped nodes back from those backups. A run
 * record of kind `remediate` holds the cluster meanwhile, as a migration does.
 *
 * One plain function for `ccm-migrate drift --remediate` and the scheduled drift check (remediate-step.ts).
 */
import pLimit from 'p-limit';
import * as z from 'zod';
import { CcmMigrateError, PreflightFailedError } from '../errors.ts';
import { waitFor } from '../kube/wait.ts';
import { providerFacts } from '../providers/catalog.ts';
import { ccmLeaderPoll } from '../steps/ccm.ts';
import type { StepContext } from '../steps/context.ts';
import { CONTROL_PLANE_MANIFESTS } from '../steps/edits.ts';
import { flipKubelet } from '../steps/nodes.ts';
import { examineCluster, takeSnapshot } from '../steps/preflight.ts';
import { restoreKubelet } from '../steps/restore.ts';
import { RunIds, UpgradeInputSchema, type UpgradeOptions, VerificationSchema } from '../steps/schemas.ts';
import { SnapshotSchema } from '../steps/snapshot.ts';
import { verify } from '../steps/verify.ts';
import { verifyNode } from '../steps/verify-node.ts';
import { kubeletAsDesired, kubeletCloudFlags } from './kubelet-flags.ts';

export const RemediateEventSchema = RunIds.extend({
  /** Kubelets restarted at once, as the upgrade's. */
  maxUnavailable: UpgradeInputSchema.shape.maxUnavailable,
  /** At most this many kubelets in this run (the rest are left for the next); all of them when absent. */
  maxNodes: z.int().min(1).optional(),
});
export type RemediateEvent = z.input<typeof RemediateEventSchema>;

export const RemediationSchema = z.object({
  clusterId: z.string(),
  runId: z.string(),
  /** The nodes whose kubelet was flipped, control-plane nodes first. */
  flipped: z.array(z.string()),
  /** Kubelets still on the in-tree provider, left for the next run by `maxNodes`. */
  left: z.int(),
  /** Absent when no kubelet needed it. */
  verification: VerificationSchema.optional(),
});
export type Remediation = z.infer<typeof RemediationSchema>;

/**
 * How the last upgrade rendered its CCM (images, workload, replicas), so that the snapshot and verify find
 * that CCM; nothing when the store has no upgrade of the cluster (it was migrated elsewhere).
 */
async function upgradeOptions(ctx: StepContext, clusterId: string): Promise<UpgradeOptions> {
  const last = (await ctx.store.list(clusterId))
    .filter((r) => r.kind === 'upgrade' && r.status === 'succeeded' && r.snapshot !== undefined)
    .at(-1);
  if (!last) return {};
  const s = SnapshotSchema.parse(last.snapshot);
  return {
    provider: s.provider,
    ccmReplicas: s.ccmReplicas,
    ...(s.ccmWorkload ? { ccmWorkload: s.ccmWorkload } : {}),
    ...(s.images ? { images: s.images } : {}),
  };
}

/** Flip `nodes` at most `limit` at a time; after a failure no further node starts. The nodes started. */
async function flipInBatches(
  event: z.infer<typeof RunIds>,
  nodes: readonly string[],
  limit: number,
  ctx: StepContext,
): Promise<{ started: string[]; error?: unknown }> {
  const run = pLimit(limit);
  const started: string[] = [];
  let error: unknown;
  await Promise.all(
    nodes.map((node) =>
      run(async () => {
        if (error !== undefined) return;
        started.push(node);
        try {
          const result = await flipKubelet({ ...event, node }, ctx);
          await ctx.store.recordStep(event.clusterId, event.runId, `kubelet/${node}`, result);
        } catch (err) {
          error ??= err;
        }
      }),
    ),
  );
  return error === undefined ? { started } : { started, error };
}

function errorOf(err: unknown): { name: string; message: string } {
  return err instanceof CcmMigrateError
    ? { name: err.name, message: err.message }
    : { name: 'Error', message: String((err as Error)?.message ?? err) };
}

/**
 * The flipped nodes' kubelets back from this run's backups, one at a time; the run then ends rolled back.
 * A node that cannot be put back ends it failed, naming both errors.
 */
async function putBack(
  ids: z.infer<typeof RunIds>,
  nodes: readonly string[],
  ctx: StepContext,
  cause: unknown,
): Promise<void> {
  const why = errorOf(cause);
  for (const node of nodes) {
    try {
      await restoreKubelet({ ...ids, sourceRunId: ids.runId, node, leaderMigration: false }, ctx);
    } catch (err) {
      const failed = errorOf(err);
      await ctx.store.finish(ids.clusterId, ids.runId, {
        status: 'failed',
        error: {
          name: failed.name,
          message: `putting node ${node} back failed: ${failed.message} (after ${why.name}: ${why.message})`,
        },
      });
      throw err;
    }
  }
  await ctx.store.finish(ids.clusterId, ids.runId, { status: 'rolled-back', error: why });
}

export async function remediateKubelets(event: RemediateEvent, ctx: StepContext): Promise<Remediation> {
  const { clusterId, runId, maxUnavailable, maxNodes } = RemediateEventSchema.parse(event);
  const ids = { clusterId, runId };
  await ctx.store.begin({ ...ids, kind: 'remediate' });
  try {
    const options = await upgradeOptions(ctx, clusterId);
    const exam = await examineCluster(ctx, runId, options);
    const inTreeControlPlane = exam.inTreeLeft.filter((f) =>
      CONTROL_PLANE_MANIFESTS.some((m) => f.endsWith(`:${m}`)),
    );
    if (inTreeControlPlane.length > 0) {
      throw new PreflightFailedError(
        `remediation flips kubelets only, and the control plane is in-tree (${inTreeControlPlane.slice(0, 5).join(', ')}): run an upgrade`,
      );
    }
    const { inTreeName } = providerFacts(exam.provider);
    const inTree = [...exam.controlPlaneNodes, ...exam.workerNodes].filter(
      (node) => !kubeletAsDesired(kubeletCloudFlags(exam.files[node] ?? []), 'external', inTreeName),
    );
    const flipped = inTree.slice(0, maxNodes ?? inTree.length);
    const left = inTree.length - flipped.length;
    const snapshot = SnapshotSchema.parse(
      await ctx.store.setSnapshotOnce(clusterId, runId, await takeSnapshot(ctx, exam, options)),
    );
    if (flipped.length === 0) {
      ctx.progress({ step: 'remediate', message: 'every kubelet is external: nothing to flip' });
      await ctx.store.finish(clusterId, runId, { status: 'succeeded', summary: { flipped, left } });
      return { ...ids, flipped, left };
    }
    // Never a kubelet off the in-tree provider while no CCM leads: nothing would run the cloud loops for it.
    await waitFor('a CCM to hold and renew its lease', ccmLeaderPoll(ctx, snapshot), ctx);
    ctx.progress({
      step: 'remediate',
      message: `${inTree.length} kubelet(s) on the in-tree provider, flipping ${maxUnavailable} at a time: ${flipped.join(', ')}${left > 0 ? ` (${left} left for the next run)` : ''}`,
    });
    const flips = await flipInBatches(ids, flipped, maxUnavailable, ctx);
    try {
      if (flips.error !== undefined) throw flips.error;
      // Each flipped node initialised again by the CCM, as the upgrade's verify-node checks its nodes.
      for (const node of flipped) await verifyNode({ ...ids, node }, ctx);
      const verification = await verify(ids, ctx);
      const result: Remediation = { ...ids, flipped, left, verification };
      await ctx.store.finish(clusterId, runId, { status: 'succeeded', summary: result });
      return result;
    } catch (err) {
      await putBack(ids, flips.started, ctx, err);
      throw err;
    }
  } catch (err) {
    const record = await ctx.store.get(clusterId, runId);
    if (record?.status === 'running') {
      await ctx.store.finish(clusterId, runId, { status: 'failed', error: errorOf(err) });
    }
    throw err;
  }
}
