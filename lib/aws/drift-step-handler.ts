/**
 * The check-drift function: the one drift step that reaches a cluster (drift-context.ts). It counts each
 * drifted cluster as a metric, which the drift alarm watches (cdk/monitoring.ts). The other drift steps'
 * functions are fleet-step-handler.ts's.
 */
import { CheckDriftEventSchema, checkClusterDrift } from '../drift/check-step.ts';
import type { DriftStepContext } from '../drift/steps.ts';
import { driftContext } from './drift-context.ts';
import type { DriftDeps } from './fleet-context.ts';
import { invocationDeadline, parsedStepHandler } from './handler.ts';
import { lambdaLogger } from './logger.ts';
import { METRICS } from './metrics.ts';

export function checkDriftHandler(deps: DriftDeps = {}) {
  const logger = deps.logger ?? lambdaLogger;
  return parsedStepHandler(
    'check-drift',
    CheckDriftEventSchema,
    async (input, ctx: DriftStepContext) => {
      const summary = await checkClusterDrift(input, ctx);
      if (summary.status === 'drifted') logger.count(METRICS.clustersDrifted, {});
      return summary;
    },
    (log, lambda) => driftContext(invocationDeadline(lambda), { ...deps, logger: log }),
    logger,
  );
}
