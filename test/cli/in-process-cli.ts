/**
 * The CLI as a user runs it, in process with the real parser: stdout and stderr captured, a fresh state
 * directory per test, and `run(twin, command, …flags)` aimed at a twin's kubeconfig.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, vi } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import { nodeFiles } from '../e2e/harness.ts';
import type { TestTwin } from '../twin/running-twin.ts';

type Command = 'upgrade' | 'downgrade' | 'plan';

export interface InProcessCli {
  /** The test's scratch directory (the state directory is `state/` below it). */
  readonly dir: string;
  /** What the command printed on stdout and stderr since the test began (or since `clear()`). */
  readonly out: string;
  clear(): void;
  /** `ccm-migrate <command> --cluster-id c1 --kubeconfig <the twin's> [--state-dir <dir>/state --yes] …`. */
  run(t: TestTwin, command: Command, ...extra: string[]): Promise<number>;
  /** Run it and expect bad input: exit 2, `message` without a stack trace, no node file or state written. */
  refused(t: TestTwin, command: Command, extra: readonly string[], message: RegExp): Promise<void>;
}

export function inProcessCli(name: string): InProcessCli {
  let dir = '';
  let out = '';
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), `ccm-migrate-cli-${name}-`));
    out = '';
    const keep = (chunk: unknown): boolean => {
      out += String(chunk);
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(keep);
    vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await rm(dir, { recursive: true, force: true });
  });
  const run = (t: TestTwin, command: Command, ...extra: string[]): Promise<number> => {
    const stateDir = command === 'plan' ? [] : ['--state-dir', path.join(dir, 'state'), '--yes'];
    const args = ['--cluster-id', 'c1', '--kubeconfig', t.twin.kubeconfigPath, ...stateDir, ...extra];
    return main([command, ...args]);
  };
  return {
    get dir() {
      return dir;
    },
    get out() {
      return out;
    },
    clear: () => {
      out = '';
    },
    run,
    refused: async (t, command, extra, message) => {
      const before = await nodeFiles(t);
      expect(await run(t, command, ...extra)).toBe(EXIT.badInput);
      expect(out).toMatch(message);
      expect(out).not.toMatch(/\n\s+at /);
      expect(await nodeFiles(t)).toEqual(before);
      expect(await readdir(dir)).toEqual([]);
    },
  };
}
