/**
 * The product's named errors. Each sets `name` explicitly (minifiers rename classes): the state machines'
 * Retry and Catch match these names, so `ERROR_NAMES` is the one list both sides import.
 * Retryable errors are waits and transient API trouble; terminal ones end the run (and, during an
 * upgrade, start the rollback).
 */

export const ERROR_NAMES = {
  /** The cluster has not reached the state the step waits for yet; retried with backoff. */
  notReadyYet: 'NotReadyYet',
  /**
   * The step used up its invocation's time (the Lambda timeout less a margin) before its waits ended; retried
   * at once: every step is idempotent, so the next invocation resumes where this one stopped.
   */
  deadlineReached: 'DeadlineReached',
  /** The API server answered 429 or 5xx; retried with backoff. */
  kubeApiThrottled: 'KubeApiThrottled',
  /** The API server refused a request (403, 404, 409, 422 …) that the step did not expect. */
  kubeApiRejected: 'KubeApiRejected',
  /** The API server could not be reached (connection refused/reset, DNS, timeout). */
  clusterUnreachable: 'ClusterUnreachable',
  /** A check before any change failed: nothing was changed. */
  preflightFailed: 'PreflightFailed',
  /** The provider is unknown, or has no CCM for this Kubernetes version. */
  unsupportedProvider: 'UnsupportedProvider',
  /** The node agent refused or failed (a file it cannot parse, a write that failed). */
  agentFailed: 'AgentFailed',
  /** The agent Job's bundle is not the one the run applied (its ConfigMap changed since): nothing ran. */
  agentBundleMismatch: 'AgentBundleMismatch',
  /** The agent image cannot run the agent (it has no nsenter): nothing ran. */
  agentImageUnfit: 'AgentImageUnfit',
  /** The cluster did not end in the state the run promised. */
  verificationFailed: 'VerificationFailed',
  /** The input (flags, spec, kubeconfig) is wrong: nothing was changed. */
  invalidInput: 'InvalidInput',
  /** Another run holds this cluster. */
  clusterLocked: 'ClusterLocked',
  /** An upgrade failed and undid its changes: the cluster is as it was (the run's Fail state). */
  rolledBack: 'RolledBack',
  /** The operator rejected the upgrade at its approval gate (SendTaskFailure's error): nothing was changed. */
  approvalRejected: 'ApprovalRejected',
} as const;

export type ErrorName = (typeof ERROR_NAMES)[keyof typeof ERROR_NAMES];

export abstract class CcmMigrateError extends Error {
  abstract override readonly name: ErrorName;
  /** Whether waiting and trying again can help. */
  abstract readonly retryable: boolean;
}

export class NotReadyYetError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.notReadyYet;
  readonly retryable = true;
}

export class DeadlineReachedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.deadlineReached;
  readonly retryable = true;
}

export class KubeApiThrottledError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.kubeApiThrottled;
  readonly retryable = true;
}

export class KubeApiRejectedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.kubeApiRejected;
  readonly retryable = false;
  /** The HTTP status the API server answered. */
  readonly status: number;

  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

export class ClusterUnreachableError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.clusterUnreachable;
  readonly retryable = true;
}

export class PreflightFailedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.preflightFailed;
  readonly retryable = false;
}

export class UnsupportedProviderError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.unsupportedProvider;
  readonly retryable = false;
}

export class AgentFailedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.agentFailed;
  readonly retryable = false;
}

export class AgentBundleMismatchError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.agentBundleMismatch;
  readonly retryable = false;
}

export class AgentImageUnfitError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.agentImageUnfit;
  readonly retryable = false;
}

export class VerificationFailedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.verificationFailed;
  readonly retryable = false;
}

export class InvalidInputError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.invalidInput;
  readonly retryable = false;
}

export class ClusterLockedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.clusterLocked;
  readonly retryable = false;
}

/** Rejected at the approval gate (in-process; on AWS the error SendTaskFailure sends): nothing was changed. */
export class ApprovalRejectedError extends CcmMigrateError {
  override readonly name = ERROR_NAMES.approvalRejected;
  readonly retryable = false;
}
