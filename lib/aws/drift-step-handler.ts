/**
 * A drift step's function: the event parsed and run through lib/steps/index.ts, exactly as the local engine
 * runs it, with the fleet's context (drift-context.ts). check-drift also counts each drifted cluster as a
 * metric, which the drift alarm watches (cdk/monitoring.ts).
 */
import type { DriftStepId } from '../../state-machines/steps.ts';
import type { DriftSummary } from '../drift/summary.ts';
import { runStep } from '../steps/index.ts';
import { type DriftDeps, driftContext } from './drift-context.ts';
import { lambdaHandler } from './handler.ts';
import { jsonLogger } from './logger.ts';
import { METRICS } from './metrics.ts';

export function driftStepHandler(id: DriftStepId, deps: DriftDeps = {}) {
  const logger = deps.logger ?? jsonLogger();
  return lambdaHandler(
    id,
    async (event) => {
      const result = await runStep(id, event, driftContext({ ...deps, logger }));
      if (id === 'check-drift' && (result as DriftSummary).status === 'drifted') {
        logger.count(METRICS.clustersDrifted, {});
      }
      return result;
    },
    logger,
  );
}
