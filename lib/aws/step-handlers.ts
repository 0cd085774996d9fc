/**
 * A step function that works on the cluster: the event parsed and run through lib/steps/index.ts, exactly
 * as the local engine runs it, with the cluster's clients from its kubeconfig secret.
 */
import type { StepId } from '../../state-machines/steps.ts';
import { runStep } from '../steps/index.ts';
import { RunIds } from '../steps/schemas.ts';
import { parseInput } from '../store/run-record.ts';
import { clusterContext } from './cluster-context.ts';
import { invocationDeadline, lambdaHandler } from './handler.ts';
import { lambdaLogger } from './logger.ts';
import type { AwsDeps } from './store-context.ts';

const ClusterOf = RunIds.pick({ clusterId: true });

export function clusterStepHandler(id: StepId, deps: AwsDeps = {}) {
  const logger = deps.logger ?? lambdaLogger;
  return lambdaHandler(
    id,
    async (event, lambda) => {
      const deadline = invocationDeadline(lambda);
      const { clusterId } = parseInput(ClusterOf, event, `event of step ${id}`);
      return runStep(id, event, await clusterContext(clusterId, deadline, { ...deps, logger }));
    },
    logger,
  );
}
