/**
 * What every step gets besides its input: cluster access, the run store, the node agent, progress output
 * and the bound on how long a step may wait inside one invocation. Lambda handlers and the local engine
 * build it; the steps never know which.
 */
import type { AgentRequest, AgentResult } from '../agent/protocol.ts';
import type { KubeClients } from '../kube/clients.ts';
import type { RunStore } from '../store/run-store.ts';

export interface Progress {
  readonly step: string;
  readonly node?: string;
  readonly message: string;
}

export interface StepContext {
  readonly clients: KubeClients;
  readonly store: RunStore;
  /** Run one agent request on a node (a Job pinned to it) and return its answer. */
  readonly agent: (node: string, request: AgentRequest) => Promise<AgentResult>;
  readonly progress: (event: Progress) => void;
  /**
   * How long a step waits for the cluster inside one invocation before it answers NotReadyYet and lets
   * the state machine retry: 60 s in Lambda (see state-machines/retry-policies.ts).
   */
  readonly waitMs: number;
  /** Pause between two looks at the cluster while waiting. */
  readonly pollMs: number;
}
