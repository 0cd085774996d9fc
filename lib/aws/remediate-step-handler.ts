/**
 * The remediate-drift function: the drift step that flips kubelets back (lib/drift/remediate-step.ts), with
 * cluster access as check-drift has it (drift-context.ts) and the run store, where its run is recorded.
 */
import { RemediateDriftEventSchema, remediateDrift } from '../drift/remediate-step.ts';
import type { DriftStepContext } from '../drift/steps.ts';
import { driftContext } from './drift-context.ts';
import type { DriftDeps } from './fleet-context.ts';
import { invocationDeadline, parsedStepHandler } from './handler.ts';
import { lambdaLogger } from './logger.ts';
import { type AwsDeps, depsStore } from './store-context.ts';

export function remediateDriftHandler(deps: DriftDeps & Pick<AwsDeps, 'store'> = {}) {
  return parsedStepHandler(
    'remediate-drift',
    RemediateDriftEventSchema,
    remediateDrift,
    (log, lambda): DriftStepContext => ({
      ...driftContext(invocationDeadline(lambda), { ...deps, logger: log }),
      store: depsStore(deps),
    }),
    deps.logger ?? lambdaLogger,
  );
}
