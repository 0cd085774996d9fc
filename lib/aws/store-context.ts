/**
 * The context of the functions that only record (finalize, record-failure, record-rollback, run-ended):
 * the run store and progress, and no cluster access, so that their bundles leave @kubernetes/client-node out.
 */
import { InvalidInputError } from '../errors.ts';
import type { KubeClients } from '../kube/clients.ts';
import { Deadline } from '../kube/deadline.ts';
import type { StepContext } from '../steps/context.ts';
import type { ClusterRegistry } from '../store/registry.ts';
import type { RunStore } from '../store/run-store.ts';
import { type Logger, lambdaLogger } from './logger.ts';
import { storeFromEnv } from './store.ts';

/** What tests (and another deployment) may swap: where runs and clusters are kept, and where logs go. */
export interface AwsDeps {
  readonly store?: () => RunStore;
  readonly registry?: () => Pick<ClusterRegistry, 'get'>;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: Logger;
}

export function depsStore(deps: AwsDeps): RunStore {
  return deps.store ? deps.store() : storeFromEnv(deps.env);
}

export function progressTo(logger: Logger): StepContext['progress'] {
  return (p) => logger.info(p.message, { step: p.step, ...(p.node ? { node: p.node } : {}) });
}

/** Cluster access that refuses loudly: a recording step that reached for the cluster is a wiring bug. */
function noCluster(step: string): never {
  throw new InvalidInputError(`step ${step} runs without cluster access`);
}

export function storeOnlyContext(step: string, store: RunStore, logger: Logger = lambdaLogger): StepContext {
  const clients = new Proxy({} as KubeClients, { get: () => noCluster(step) });
  return {
    clients,
    store,
    agent: () => noCluster(step),
    progress: progressTo(logger),
    waitMs: 0,
    pollMs: 0,
    // Nothing to wait for: the store answers at once.
    deadline: Deadline.in(0),
  };
}
