/**
 * The CLI's exit codes, documented in README.md. Scripts tell failure kinds apart by them.
 */
export const EXIT = {
  ok: 0,
  /** Something failed that is not one of the kinds below (the message says what). */
  failed: 1,
  /** Bad input: a bad flag, spec, kubeconfig or file; nothing was changed. */
  badInput: 2,
} as const;

/** A failure the CLI reports as one line and an exit code, without a stack trace. */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number = EXIT.failed) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}
