/**
 * The context of a step that works on the cluster, in Lambda: clients from the cluster's kubeconfig secret,
 * the node agent as Jobs through them (its bundle shipped prebuilt next to the function's code), the run
 * store, the wait bounds the retry policies assume (state-machines/retry-policies.ts), and the invocation's
 * deadline.
 */
import { prestartAgentJob, runAgentJob } from '../kube/agent-job.ts';
import type { Deadline } from '../kube/deadline.ts';
import type { StepContext } from '../steps/context.ts';
import type { ExamineContext } from '../steps/preflight.ts';
import { STEP_WAIT_MS } from '../steps/time-budget.ts';
import { clusterClients, secretsClient } from './cluster-access.ts';
import { DEFAULT_KUBECONFIG_SECRET_PREFIX, ENV } from './env.ts';
import { lambdaLogger } from './logger.ts';
import { registryFromEnv } from './store.ts';
import { type AwsDeps, depsStore, progressTo } from './store-context.ts';

/** Looks at the cluster once a second while waiting: a run of hundreds of nodes stays gentle on the API. */
export const LAMBDA_POLL_MS = 1000;

/**
 * Everything but the run store: what a drift check needs. `secretArn` is the registry record's secret, when
 * the caller has the record (see cluster-access.ts for which secret wins).
 */
export async function examineContext(
  clusterId: string,
  deadline: Deadline,
  deps: AwsDeps = {},
  secretArn?: string,
): Promise<ExamineContext> {
  const env = deps.env ?? process.env;
  const logger = deps.logger ?? lambdaLogger;
  const clients = await clusterClients(clusterId, {
    secrets: secretsClient(),
    prefix: env[ENV.kubeconfigSecretPrefix] || DEFAULT_KUBECONFIG_SECRET_PREFIX,
    ...(secretArn ? { secretArn } : {}),
  });
  const image = env[ENV.agentImage];
  return {
    clients,
    agent: (node, request, how = {}) =>
      runAgentJob(clients, {
        ...how,
        node,
        request,
        timeoutMs: STEP_WAIT_MS,
        pollMs: LAMBDA_POLL_MS,
        deadline,
        ...(image ? { image } : {}),
      }),
    prestartAgent: (node, request) =>
      prestartAgentJob(clients, { node, request, timeoutMs: STEP_WAIT_MS, ...(image ? { image } : {}) }),
    progress: progressTo(logger),
    waitMs: STEP_WAIT_MS,
    pollMs: LAMBDA_POLL_MS,
    deadline,
  };
}

/**
 * A migration step's context: the cluster reached through the secret its registry record names (a cluster
 * started by CLI without a record: the `<prefix><clusterId>` convention), and the run store.
 */
export async function clusterContext(
  clusterId: string,
  deadline: Deadline,
  deps: AwsDeps = {},
): Promise<StepContext> {
  const registry = deps.registry ? deps.registry() : registryFromEnv(deps.env);
  const record = await registry.get(clusterId);
  return {
    ...(await examineContext(clusterId, deadline, deps, record?.kubeconfigSecretArn)),
    store: depsStore(deps),
  };
}
