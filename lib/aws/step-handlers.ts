/**
 * A step function that works on the cluster: the event parsed and run as the local engine runs it
 * (lib/steps/definition.ts), with the cluster's clients from its kubeconfig secret. It is given its step's
 * definition, not an id to look up, so that its bundle holds that step only.
 */
import type * as z from 'zod';
import type { StepId } from '../../state-machines/steps.ts';
import type { StepContext } from '../steps/context.ts';
import { runDefinition, type StepDefinition } from '../steps/definition.ts';
import { RunIds } from '../steps/schemas.ts';
import { parseInput } from '../store/run-record.ts';
import { clusterContext } from './cluster-context.ts';
import { invocationDeadline, lambdaHandler } from './handler.ts';
import { lambdaLogger } from './logger.ts';
import type { AwsDeps } from './store-context.ts';

const ClusterOf = RunIds.pick({ clusterId: true });

export function clusterStepHandler(
  id: StepId,
  definition: StepDefinition<z.ZodType, StepContext>,
  deps: AwsDeps = {},
) {
  const logger = deps.logger ?? lambdaLogger;
  return lambdaHandler(
    id,
    async (event, lambda) => {
      const deadline = invocationDeadline(lambda);
      const { clusterId } = parseInput(ClusterOf, event, `event of step ${id}`);
      return runDefinition(
        id,
        definition,
        event,
        await clusterContext(clusterId, deadline, { ...deps, logger }),
      );
    },
    logger,
  );
}
