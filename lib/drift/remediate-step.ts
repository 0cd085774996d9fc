/**
 * The drift workflow's remediation of kubelets (state-machines/drift.ts): where a cluster's record asks
 * for remediation and a deep check found only kubelets back on the in-tree provider of an external cluster,
 * the workflow runs the same remediation as `ccm-migrate drift --remediate` (remediate.ts) rather than
 * requesting a whole upgrade, one batch (the record's maxUnavailable) per drift run. Its run id comes from
 * the drift run and the cluster, so that a retried Task resumes that run instead of starting another.
 */
import * as z from 'zod';
import { InvalidInputError } from '../errors.ts';
import { ResourceName } from '../steps/schemas.ts';
import { type FleetCluster, remediationRequestId } from './events.ts';
import type { DriftReport } from './findings.ts';
import { remediateKubelets } from './remediate.ts';
import { type DriftStepContext, registered } from './steps.ts';
import type { RemediatedSchema } from './summary.ts';

export const RemediateDriftEventSchema = z.object({ clusterId: ResourceName, runId: ResourceName });

/** Whether the workflow flips this cluster's kubelets: its policy asks, and kubelets are all its critical drift. */
export function remediatesKubelets(
  report: Pick<DriftReport, 'status' | 'expect' | 'findings'>,
  cluster: Pick<FleetCluster, 'desiredMode' | 'policy'>,
): boolean {
  const critical = report.findings.filter((f) => f.severity === 'critical');
  return (
    report.status === 'drifted' &&
    cluster.policy.autoRemediate === true &&
    cluster.desiredMode === 'external' &&
    report.expect === 'external' &&
    critical.length > 0 &&
    critical.every((f) => f.kind === 'kubelet-flags')
  );
}

export async function remediateDrift(
  event: z.infer<typeof RemediateDriftEventSchema>,
  ctx: DriftStepContext,
): Promise<z.infer<typeof RemediatedSchema>> {
  const cluster = await registered(ctx, event.clusterId);
  if (!cluster.policy.autoRemediate || cluster.desiredMode !== 'external') {
    throw new InvalidInputError(
      `cluster ${cluster.clusterId}'s record does not ask for its kubelets to be remediated (autoRemediate on an external cluster)`,
    );
  }
  if (!ctx.store) throw new InvalidInputError('remediating drift needs the run store, to record its run');
  const result = await remediateKubelets(
    {
      clusterId: cluster.clusterId,
      runId: remediationRequestId(event.runId, cluster.clusterId),
      maxUnavailable: cluster.policy.maxUnavailable,
      // One batch per drift run: the examination, the flips, the verify and a put-back all fit one
      // invocation's time; the next deep run takes the next batch.
      maxNodes: cluster.policy.maxUnavailable,
    },
    { ...(await ctx.clusterContext(cluster.clusterId)), store: ctx.store },
  );
  return { runId: result.runId, kubelets: result.flipped.length, left: result.left };
}
