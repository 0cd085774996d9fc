/**
 * The CLI's exit codes, documented in README.md. Scripts tell failure kinds apart by them.
 */
import { ERROR_NAMES, type ErrorName } from '../errors.ts';

export const EXIT = {
  ok: 0,
  /** Something failed that is not one of the kinds below (the message says what). */
  failed: 1,
  /** Bad input: a bad flag, spec, kubeconfig or file; nothing was changed. */
  badInput: 2,
  /** A preflight check failed or the provider is unsupported: nothing was changed. */
  preflightFailed: 3,
  /** The cluster could not be reached (or kept throttling) long enough to finish. */
  unreachable: 4,
  /**
   * The node agent refused or failed on a node (e.g. a file it cannot parse), or its Job did not run it
   * (a bundle that is not the one applied, an image without nsenter).
   */
  agentFailed: 5,
  /** The run finished its changes but the cluster is not in the promised state. */
  verificationFailed: 6,
  /** Another run holds this cluster. */
  locked: 7,
  /** A wait for the cluster ran out of retries. */
  timedOut: 8,
  /** The upgrade failed and was rolled back: the cluster is as it was before the run. */
  rolledBack: 9,
  /** A drift check found the cluster not as its desired mode says. */
  drifted: 10,
  /** The upgrade was rejected (or not answered in time) at its approval gate: nothing was changed. */
  notApproved: 11,
} as const;

const BY_ERROR: Readonly<Record<ErrorName, number>> = {
  [ERROR_NAMES.invalidInput]: EXIT.badInput,
  [ERROR_NAMES.preflightFailed]: EXIT.preflightFailed,
  [ERROR_NAMES.unsupportedProvider]: EXIT.preflightFailed,
  [ERROR_NAMES.clusterUnreachable]: EXIT.unreachable,
  [ERROR_NAMES.kubeApiThrottled]: EXIT.unreachable,
  [ERROR_NAMES.kubeApiRejected]: EXIT.failed,
  [ERROR_NAMES.agentFailed]: EXIT.agentFailed,
  [ERROR_NAMES.agentBundleMismatch]: EXIT.agentFailed,
  [ERROR_NAMES.agentImageUnfit]: EXIT.agentFailed,
  [ERROR_NAMES.verificationFailed]: EXIT.verificationFailed,
  [ERROR_NAMES.clusterLocked]: EXIT.locked,
  [ERROR_NAMES.notReadyYet]: EXIT.timedOut,
  [ERROR_NAMES.deadlineReached]: EXIT.timedOut,
  [ERROR_NAMES.rolledBack]: EXIT.rolledBack,
  [ERROR_NAMES.approvalRejected]: EXIT.notApproved,
};

export function exitCodeForError(name: string): number {
  return BY_ERROR[name as ErrorName] ?? EXIT.failed;
}

/** A failure the CLI reports as one line and an exit code, without a stack trace. */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number = EXIT.failed) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}
