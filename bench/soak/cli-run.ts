/**
 * `ccm-migrate upgrade` as the operator runs it, in a child process: killed with SIGKILL as it prints its
 * n-th state (`▶ …`), as a laptop that dies is (nothing of it gets to clean up), or left to end on its own
 * (a second request from another terminal).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/ccm-migrate.js', import.meta.url));

/**
 * The CLI waits as long as in Lambda (minutes, where the twin's runs take seconds): a run to be killed that
 * has not reached its state by then is killed anyway, and one left to end is given up on.
 */
const KILL_ANYWAY_MS = 60_000;
const GIVE_UP_MS = 300_000;

export interface CliRun {
  /** Null when it was killed. */
  readonly code: number | null;
  readonly killed: boolean;
  /** Its last line: the error, when it failed. */
  readonly lastLine: string;
  /** It took up an unfinished run (its summary says `(resumed)`). */
  readonly resumed: boolean;
}

export function runCli(args: readonly string[], opts: { killAtState?: number } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'upgrade', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let killed = false;
    const kill = (): void => {
      killed = child.kill('SIGKILL');
    };
    const take = (chunk: Buffer): void => {
      output += chunk.toString();
      const states = output.match(/▶/g)?.length ?? 0;
      if (!killed && opts.killAtState !== undefined && states >= opts.killAtState) kill();
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const anyway = setTimeout(kill, opts.killAtState === undefined ? GIVE_UP_MS : KILL_ANYWAY_MS);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(anyway);
      const lastLine = output.trim().split('\n').at(-1) ?? '';
      resolve({ code, killed, lastLine, resumed: output.includes('(resumed)') });
    });
  });
}
