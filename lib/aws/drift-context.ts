/**
 * The check-drift step's context in Lambda (lib/drift/steps.ts DriftStepContext): the fleet's context
 * (fleet-context.ts) and each cluster reached through the secret its record names (cluster-access.ts).
 * Built per invocation; a record read once serves both the step's lookup and the cluster access.
 */
import type { DriftStepContext } from '../drift/steps.ts';
import type { Deadline } from '../kube/deadline.ts';
import { examineContext } from './cluster-context.ts';
import { type DriftDeps, fleetContext } from './fleet-context.ts';

export function driftContext(deadline: Deadline, deps: DriftDeps = {}): DriftStepContext {
  const fleet = fleetContext(deps);
  const env = deps.env ?? process.env;
  return {
    ...fleet,
    clusterContext: async (clusterId) =>
      examineContext(
        clusterId,
        deadline,
        { env, ...(deps.logger ? { logger: deps.logger } : {}) },
        (await fleet.clusters.get(clusterId))?.kubeconfigSecretArn,
      ),
  };
}
