/**
 * What the steps get in local mode: the clients of the kubeconfig, the node agent run as Jobs through them,
 * progress to the caller, the wait bounds (a step waits as long as in Lambda, looking more often), and the
 * deadline of one invocation: build one context per step invocation.
 */
import type { AgentRequest, AgentResult } from '../agent/protocol.ts';
import { prestartAgentJob, runAgentJob } from '../kube/agent-job.ts';
import type { KubeClients } from '../kube/clients.ts';
import { Deadline } from '../kube/deadline.ts';
import type { Progress } from '../steps/context.ts';
import type { ExamineContext } from '../steps/preflight.ts';
import { STEP_WAIT_MS } from '../steps/time-budget.ts';

/**
 * How often a waiting step looks at the cluster in local mode: a few requests a second, so that a wait
 * ends within a fraction of a static pod restart.
 */
const DEFAULT_POLL_MS = 200;

export interface LocalContextOptions {
  readonly clients: KubeClients;
  /** The node agent's image (its code comes in a ConfigMap: any image with Node 22 and nsenter works). */
  readonly agentImage?: string;
  /** @default STEP_WAIT_MS, as in Lambda */
  readonly waitMs?: number;
  readonly pollMs?: number;
  /**
   * How long the waits of one invocation may take in all: its deadline is this far from the context's
   * making. The engines that run the state machines (with its Retry to resume a cut step) default to
   * STEP_BUDGET_MS, as in Lambda. @default none: plan and a drift check run once, nothing would resume them
   */
  readonly stepBudgetMs?: number;
  readonly onProgress?: (progress: Progress) => void;
  /** Called with each answer of the node agent (the run's history keeps its files' hashes and flags). */
  readonly onAgentResult?: (node: string, result: AgentResult) => void;
  readonly signal?: AbortSignal;
}

/** The context of one invocation; its `deadline` is `stepBudgetMs` from now unless given. */
export function localContext(
  opts: LocalContextOptions,
  deadline = Deadline.in(opts.stepBudgetMs ?? Number.POSITIVE_INFINITY),
): ExamineContext {
  const waitMs = opts.waitMs ?? STEP_WAIT_MS;
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  return {
    clients: opts.clients,
    agent: async (node: string, request: AgentRequest, how = {}) => {
      const result = await runAgentJob(opts.clients, {
        ...how,
        node,
        request,
        timeoutMs: waitMs,
        pollMs,
        deadline,
        ...(opts.agentImage ? { image: opts.agentImage } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      opts.onAgentResult?.(node, result);
      return result;
    },
    prestartAgent: (node: string, request: AgentRequest) =>
      prestartAgentJob(opts.clients, {
        node,
        request,
        timeoutMs: waitMs,
        ...(opts.agentImage ? { image: opts.agentImage } : {}),
      }),
    progress: opts.onProgress ?? (() => undefined),
    waitMs,
    pollMs,
    deadline,
  };
}
