/**
 * The check-drift function: the one drift step that reaches a cluster (drift-context.ts). It counts each
 * drifted cluster as a metric, which the drift alarm watches (cdk/monitoring.ts). The other drift steps'
 * functions are fleet-step-handler.ts's.
 */
import { CheckDriftEventSchema, checkClusterDrift } from '../drift/check-step.ts';
import { parseInput } from '../store/run-record.ts';
import { driftContext } from './drift-context.ts';
import type { DriftDeps } from './fleet-context.ts';
import { lambdaHandler } from './handler.ts';
import { jsonLogger } from './logger.ts';
import { METRICS } from './metrics.ts';

export function checkDriftHandler(deps: DriftDeps = {}) {
  const logger = deps.logger ?? jsonLogger();
  return lambdaHandler(
    'check-drift',
    async (event) => {
      const input = parseInput(CheckDriftEventSchema, event, 'event of step check-drift');
      const summary = await checkClusterDrift(input, driftContext({ ...deps, logger }));
      if (summary.status === 'drifted') logger.count(METRICS.clustersDrifted, {});
      return summary;
    },
    logger,
  );
}
