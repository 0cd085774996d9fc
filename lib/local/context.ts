/**
 * What the steps get in local mode: the clients of the kubeconfig, the node agent run as Jobs through them,
 * progress to the caller, and the wait bounds (a step waits as long as in Lambda, looking more often).
 */
import type { AgentRequest } from '../agent/protocol.ts';
import { runAgentJob } from '../kube/agent-job.ts';
import type { KubeClients } from '../kube/clients.ts';
import type { Progress } from '../steps/context.ts';
import type { ExamineContext } from '../steps/preflight.ts';

/** As in Lambda: see state-machines/retry-policies.ts. */
const DEFAULT_WAIT_MS = 60_000;
/**
 * How often a waiting step looks at the cluster in local mode: a few requests a second, so that a wait
 * ends within a fraction of a static pod restart.
 */
const DEFAULT_POLL_MS = 200;

export interface LocalContextOptions {
  readonly clients: KubeClients;
  /** The node agent's image (its code comes in a ConfigMap: any image with Node 22 and nsenter works). */
  readonly agentImage?: string;
  readonly waitMs?: number;
  readonly pollMs?: number;
  readonly onProgress?: (progress: Progress) => void;
  readonly signal?: AbortSignal;
}

export function localContext(opts: LocalContextOptions): ExamineContext {
  const waitMs = opts.waitMs ?? DEFAULT_WAIT_MS;
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  return {
    clients: opts.clients,
    agent: (node: string, request: AgentRequest) =>
      runAgentJob(opts.clients, {
        node,
        request,
        timeoutMs: waitMs,
        pollMs,
        ...(opts.agentImage ? { image: opts.agentImage } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
    progress: opts.onProgress ?? (() => undefined),
    waitMs,
    pollMs,
  };
}
