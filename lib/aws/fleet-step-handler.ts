/**
 * A drift step's function that never reaches a cluster (list-clusters, publish-drift, summarize-drift):
 * its step is imported directly, not through lib/steps/index.ts, and its context has no cluster access, so
 * that its bundle holds no Kubernetes client.
 */
import type * as z from 'zod';
import type { DriftStepId } from '../../state-machines/steps.ts';
import type { DriftStepContext } from '../drift/steps.ts';
import { InvalidInputError } from '../errors.ts';
import { type DriftDeps, fleetContext } from './fleet-context.ts';
import { parsedStepHandler } from './handler.ts';
import { type Logger, lambdaLogger } from './logger.ts';

export function fleetStepHandler<S extends z.ZodType>(
  id: Exclude<DriftStepId, 'check-drift'>,
  schema: S,
  run: (event: z.infer<S>, ctx: DriftStepContext) => Promise<unknown>,
  deps: DriftDeps = {},
) {
  const context = (logger: Logger): DriftStepContext => ({
    ...fleetContext({ ...deps, logger }),
    clusterContext: () => Promise.reject(new InvalidInputError(`step ${id} reaches no cluster`)),
  });
  return parsedStepHandler(id, schema, run, context, deps.logger ?? lambdaLogger);
}
