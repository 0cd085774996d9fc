/**
 * The drift steps' context in Lambda (lib/drift/steps.ts DriftStepContext): the registry on the run table,
 * each cluster reached through the secret its record names (cluster-access.ts), events put on the stack's
 * bus. Built per invocation; a record read once serves both the step's lookup and the cluster access.
 */
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { DriftStepContext } from '../drift/steps.ts';
import type { ClusterRecord, ClusterRegistry } from '../store/registry.ts';
import { examineContext } from './cluster-context.ts';
import { ENV, envVar } from './env.ts';
import type { Logger } from './logger.ts';
import { publish } from './publish.ts';
import { registryFromEnv } from './store.ts';

/** What tests (and another deployment) may swap. */
export interface DriftDeps {
  readonly registry?: () => Pick<ClusterRegistry, 'get' | 'list'>;
  readonly events?: EventBridgeClient;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  readonly now?: () => number;
}

let defaultEvents: EventBridgeClient | undefined;

export function driftContext(deps: DriftDeps = {}): DriftStepContext {
  const env = deps.env ?? process.env;
  const registry = deps.registry ? deps.registry() : registryFromEnv(env);
  const records = new Map<string, Promise<ClusterRecord | undefined>>();
  const get = (clusterId: string) => {
    let record = records.get(clusterId);
    if (!record) {
      record = registry.get(clusterId);
      records.set(clusterId, record);
    }
    return record;
  };
  return {
    clusters: { get, list: () => registry.list() },
    clusterContext: async (clusterId) =>
      examineContext(
        clusterId,
        { env, ...(deps.logger ? { logger: deps.logger } : {}) },
        (await get(clusterId))?.kubeconfigSecretArn,
      ),
    publish: (event) => {
      defaultEvents ??= new EventBridgeClient({});
      return publish(deps.events ?? defaultEvents, envVar(ENV.eventBusName, env), event);
    },
    ...(deps.now ? { now: deps.now } : {}),
  };
}
