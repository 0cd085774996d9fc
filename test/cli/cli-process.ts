/**
 * `ccm-migrate` as a child process, as a user runs it: started until a line appears, or run to its end.
 * One process per test at a time: `commandProcesses()` kills it after each test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

export const BIN = fileURLToPath(new URL('../../bin/ccm-migrate.js', import.meta.url));

export interface Started {
  out(): string;
  readonly exit: Promise<number>;
  readonly process: ChildProcess;
}

/** The commands of one test file; the running one is killed after each test. Call at the top level. */
export function commandProcesses(): {
  startUntil(args: string[], marker: string, env?: NodeJS.ProcessEnv): Promise<Started>;
  runToEnd(args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number; out: string }>;
} {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    child = undefined;
  });
  const start = (args: string[], env: NodeJS.ProcessEnv) => {
    const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    child = proc;
    let out = '';
    const exit = new Promise<number>((resolve) => proc.on('exit', (code) => resolve(code ?? -1)));
    const listen = (seen: () => void): void => {
      const on = (chunk: Buffer): void => {
        out += chunk.toString();
        seen();
      };
      proc.stdout.on('data', on);
      proc.stderr.on('data', on);
    };
    return { proc, exit, out: () => out, listen };
  };
  return {
    /** Resolves once `marker` is in its output (stdout or stderr); rejects if it exits first. */
    startUntil: (args, marker, env = process.env) =>
      new Promise((resolve, reject) => {
        const p = start(args, env);
        p.listen(() => {
          if (p.out().includes(marker)) resolve({ out: p.out, exit: p.exit, process: p.proc });
        });
        p.exit.then((code) => reject(new Error(`exited ${code} before "${marker}":\n${p.out()}`)));
      }),
    /** Its exit code and everything it printed. */
    runToEnd: async (args, env = process.env) => {
      const p = start(args, env);
      p.listen(() => {});
      return { code: await p.exit, out: p.out() };
    },
  };
}
