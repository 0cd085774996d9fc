/**
 * What every step gets besides its input: cluster access, the run store, the node agent, progress output,
 * the bound on each wait and the invocation's deadline that all its waits share. Lambda handlers and the
 * local engine build it once per invocation; the steps never know which.
 */
import type { AgentRequest, AgentResult } from '../agent/protocol.ts';
import type { PrestartedAgent } from '../kube/agent-job.ts';
import type { KubeClients } from '../kube/clients.ts';
import type { Deadline } from '../kube/deadline.ts';
import type { RunStore } from '../store/run-store.ts';

/** What a node goes through during part of a step (Progress's `phase`). */
export const PHASES = ['kubelet-restart', 'static-pods-restart', 'uninitialized-taint'] as const;

export interface Progress {
  readonly step: string;
  readonly node?: string;
  readonly message: string;
  /**
   * What the node goes through from this moment until the step's next report or its end: its kubelet or
   * its static pods (kube-apiserver, kube-controller-manager) restarting on the files just written, or the
   * uninitialized taint waiting for the CCM. The run report draws these phases from it.
   */
  readonly phase?: (typeof PHASES)[number];
}

export interface StepContext {
  readonly clients: KubeClients;
  readonly store: RunStore;
  /**
   * Run one agent request on a node (a Job pinned to it) and return its answer, within `deadline`;
   * `prestarted`: its Job was most likely created ahead (prestartAgent), so it is looked for first;
   * `goGiven`: it was, and its go was given with others' (giveGoSignals), so it is only waited for.
   */
  readonly agent: (
    node: string,
    request: AgentRequest,
    opts?: { readonly prestarted?: boolean; readonly goGiven?: boolean },
  ) => Promise<AgentResult>;
  /**
   * Create the agent Job of a later turn now: its pod starts while this turn runs, and its agent waits for
   * the go that `agent` with the same request gives it (lib/kube/agent-job.ts). Absent: no pre-start.
   * Undefined: the Job was there already.
   */
  readonly prestartAgent?: (node: string, request: AgentRequest) => Promise<PrestartedAgent | undefined>;
  readonly progress: (event: Progress) => void;
  /**
   * How long one wait for the cluster lasts before it answers NotReadyYet and lets the state machine retry:
   * STEP_WAIT_MS (time-budget.ts; see state-machines/retry-policies.ts).
   */
  readonly waitMs: number;
  /**
   * The invocation's deadline (Lambda's remaining time less a margin; in-process, a budget): every wait of
   * the step draws on it, and one it cuts ends with DeadlineReached before Lambda's timeout.
   */
  readonly deadline: Deadline;
  /** Pause between two looks at the cluster while waiting. */
  readonly pollMs: number;
}
