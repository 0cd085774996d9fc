/**
 * The drift workflow's one step that reaches a cluster: check-drift (the others are in steps.ts, so that
 * their functions are bundled without a Kubernetes client).
 */
import * as z from 'zod';
import { CcmMigrateError } from '../errors.ts';
import { ResourceName } from '../steps/schemas.ts';
import { checkDrift } from './check.ts';
import { DesiredModeSchema } from './findings.ts';
import { remediatesKubelets } from './remediate-step.ts';
import { DepthSchema, type DriftStepContext, registered } from './steps.ts';
import { type DriftSummary, summarizeReport, unknownSummary } from './summary.ts';

export const CheckDriftEventSchema = z.object({
  clusterId: ResourceName,
  runId: ResourceName.optional(),
  /** Overrides the registry's desiredMode (a one-off check). */
  expect: DesiredModeSchema.optional(),
  depth: DepthSchema,
});

/**
 * One cluster's check against its desired mode. A cluster that cannot be observed for good (refused,
 * unregistered, no kubeconfig) is reported unknown here, with why; throttling and an unreachable API are
 * thrown for the state machine to retry, and its Catch reports unknown once retries are spent.
 */
export async function checkClusterDrift(
  event: z.infer<typeof CheckDriftEventSchema>,
  ctx: DriftStepContext,
): Promise<DriftSummary> {
  try {
    const cluster = await registered(ctx, event.clusterId);
    const report = await checkDrift(await ctx.clusterContext(cluster.clusterId), {
      clusterId: cluster.clusterId,
      provider: cluster.provider,
      expect: event.expect ?? cluster.desiredMode,
      deep: event.depth === 'deep',
      throwRetryable: true,
      ...(ctx.now ? { now: ctx.now } : {}),
    });
    const summary = summarizeReport(report);
    return remediatesKubelets(report, cluster) ? { ...summary, remediation: 'kubelets' } : summary;
  } catch (err) {
    // Retrying cannot help: say why here, where the message is still ours and short.
    if (err instanceof CcmMigrateError && !err.retryable) {
      return unknownSummary(event.clusterId, `${err.name}: ${err.message}`);
    }
    throw err;
  }
}
