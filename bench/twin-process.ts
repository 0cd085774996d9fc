/**
 * The twin in a process of its own (issue 17): at 3 + 500 it was the bottleneck of the process it shared with
 * the orchestrator (47 % of the busy samples), so each waited on the other's CPU and neither's time could be
 * told apart. Here the twin runs in a child process (bench/twin-process-child.ts) and the bench reads its API
 * counts and CPU over IPC; the orchestrator's CPU is this process's own.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ApiServerStats } from '../lib/twin/api/front-door.ts';
import type { TwinSpec } from '../lib/twin/spec.ts';

const CHILD = fileURLToPath(new URL('./twin-process-child.ts', import.meta.url));

/** What the parent asks the child; each answer carries the request's id. */
export type TwinRequest = { readonly id: number; readonly op: 'stats' | 'cpu' | 'stop' };
export type TwinMessage =
  | { readonly ready: string }
  | { readonly failed: string }
  | { readonly id: number; readonly result: unknown };

export interface TwinProcess {
  readonly kubeconfigPath: string;
  /** The twin's API server's counts so far. */
  stats(): Promise<ApiServerStats>;
  /** The twin process's CPU so far (user + system). */
  cpuSeconds(): Promise<number>;
  stop(): Promise<void>;
}

export async function startTwinProcess(spec: TwinSpec, stateDir: string): Promise<TwinProcess> {
  const child = fork(CHILD, [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  const pending = new Map<number, (result: unknown) => void>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<string>((resolve, reject) => {
    child.on('message', (m: TwinMessage) => {
      if ('ready' in m) resolve(m.ready);
      else if ('failed' in m) reject(new Error(`the twin process did not start: ${m.failed}`));
      else pending.get(m.id)?.(m.result);
    });
    child.once('exit', (code) => reject(new Error(`the twin process exited (${code}) before it was ready`)));
  });
  child.send({ spec, stateDir });
  const kubeconfigPath = await ready;
  let next = 0;
  const ask = (op: TwinRequest['op']): Promise<unknown> =>
    new Promise((resolve) => {
      const id = next++;
      pending.set(id, (result) => {
        pending.delete(id);
        resolve(result);
      });
      child.send({ id, op } satisfies TwinRequest);
    });
  return {
    kubeconfigPath,
    stats: async () => (await ask('stats')) as ApiServerStats,
    cpuSeconds: async () => (await ask('cpu')) as number,
    stop: async () => {
      await ask('stop');
      await exited;
    },
  };
}
