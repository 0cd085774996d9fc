/**
 * What every part of a running twin shares: the spec, the object store, the node directories, the faults,
 * and the signal that stops every loop. The API server and the simulated components (kubelets,
 * controllers, the cloud) only meet through the store, as real components only meet through the API.
 */
import path from 'node:path';
import type { Faults } from './faults.ts';
import type { TwinSpec } from './spec.ts';
import type { ClusterStore } from './store.ts';

export interface TwinContext {
  readonly spec: TwinSpec;
  readonly store: ClusterStore;
  /** Root of the twin's files: `nodes/<node>/…`, `invariants.jsonl`, `kubeconfig`. */
  readonly stateDir: string;
  readonly faults: Faults;
  /** Aborted when the twin stops: every loop and timer ends with it. */
  readonly signal: AbortSignal;
  /** Date.now() when the twin started. */
  readonly startedAt: number;
}

/** The directory that stands for a node's root filesystem. */
export function nodeRoot(stateDir: string, node: string): string {
  return path.join(stateDir, 'nodes', node);
}

/** Where a host's absolute path lives inside the node's directory. */
export function hostPath(stateDir: string, node: string, absolute: string): string {
  return path.join(nodeRoot(stateDir, node), absolute);
}
