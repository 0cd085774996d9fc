/**
 * What every drift step gets in Lambda besides cluster access: the registry on the run table (each record
 * read once per invocation) and events put on the stack's bus. Nothing here reaches a cluster, so the
 * functions of the steps that need no more (list-clusters, publish-drift, summarize-drift) are bundled
 * without a Kubernetes client; drift-context.ts adds cluster access for check-drift.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { DriftStepContext } from '../drift/steps.ts';
import type { ClusterRecord, ClusterRegistry } from '../store/registry.ts';
import { ENV, envVar } from './env.ts';
import type { Logger } from './logger.ts';
import { eventsClient, publish } from './publish.ts';
import { registryFromEnv } from './store.ts';

/** What tests (and another deployment) may swap. */
export interface DriftDeps {
  readonly registry?: () => Pick<ClusterRegistry, 'get' | 'list'>;
  readonly events?: EventBridgeClient;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  readonly now?: () => number;
}

type FleetContext = Omit<DriftStepContext, 'clusters' | 'clusterContext'> & {
  readonly clusters: {
    get(clusterId: string): Promise<ClusterRecord | undefined>;
    list(): Promise<ClusterRecord[]>;
  };
};

export function fleetContext(deps: DriftDeps = {}): FleetContext {
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
    publish: (event) => publish(deps.events ?? eventsClient(), envVar(ENV.eventBusName, env), event),
    ...(deps.now ? { now: deps.now } : {}),
  };
}
