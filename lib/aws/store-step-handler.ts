/**
 * A step function that only records in the run store (finalize, record-failure, record-rollback): its step
 * is imported directly, not through lib/steps/index.ts, so that its bundle holds no Kubernetes client.
 */
import type * as z from 'zod';
import type { StepId } from '../../state-machines/steps.ts';
import type { StepContext } from '../steps/context.ts';
import { parsedStepHandler } from './handler.ts';
import { type Logger, lambdaLogger } from './logger.ts';
import { type AwsDeps, depsStore, storeOnlyContext } from './store-context.ts';

export function storeStepHandler<S extends z.ZodType>(
  id: StepId,
  schema: S,
  run: (event: z.infer<S>, ctx: StepContext) => Promise<unknown>,
  deps: AwsDeps = {},
) {
  const context = (logger: Logger) => storeOnlyContext(id, depsStore(deps), logger);
  return parsedStepHandler(id, schema, run, context, deps.logger ?? lambdaLogger);
}
