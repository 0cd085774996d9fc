/**
 * `ccm-migrate report` on bad input: an unknown cluster or run, a run without a history, a directory that is
 * not a twin's, an --out nobody can write. Each is one line, exit 2, no stack trace and no file written.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import type { HistoryEntry } from '../../lib/local/history.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { inProcessCli } from './in-process-cli.ts';

const cli = inProcessCli('report');
let store: LocalRunStore;

beforeEach(async () => {
  store = new LocalRunStore(path.join(cli.dir, 'state'));
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  await store.finish('c1', 'up-1', { status: 'succeeded' });
});

function report(...extra: string[]): Promise<number> {
  return main(['report', '--state-dir', path.join(cli.dir, 'state'), ...extra]);
}

async function withHistory(): Promise<void> {
  const at = Date.now();
  const entries: HistoryEntry[] = [
    { type: 'run-started', at, kind: 'upgrade', maxUnavailable: 1 },
    { type: 'run-ended', at: at + 10, status: 'SUCCEEDED', transitions: 2, apiRequests: 3 },
  ];
  await writeFile(store.historyFile('c1', 'up-1'), entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
}

describe('ccm-migrate report, bad input', () => {
  const html = (): string => path.join(cli.dir, 'run.html');

  it.each([
    ['an unknown cluster', ['--cluster-id', 'nope'], /no run of cluster nope in /],
    ['an unknown run', ['--cluster-id', 'c1', '--run-id', 'up-2'], /no run up-2 of cluster c1 in /],
    ['a run without a history', ['--cluster-id', 'c1'], /run up-1 of cluster c1 has no history/],
  ])('refuses %s: exit 2, one line', async (_what, args, message) => {
    expect(await report(...args, '--out', html())).toBe(EXIT.badInput);
    expect(cli.out).toMatch(message);
    expect(cli.out).not.toMatch(/\n\s+at /);
    expect(existsSync(html())).toBe(false);
  });

  it('refuses an --out in a directory that does not exist, before reading anything', async () => {
    await withHistory();
    const target = path.join(cli.dir, 'missing', 'run.html');
    expect(await report('--cluster-id', 'c1', '--out', target)).toBe(EXIT.badInput);
    expect(cli.out).toContain(`cannot write the report to ${target}`);
    expect(cli.out).not.toMatch(/\n\s+at /);
  });

  it('refuses a --twin-dir that is not a twin’s state dir', async () => {
    await withHistory();
    expect(await report('--cluster-id', 'c1', '--twin-dir', cli.dir, '--out', html())).toBe(EXIT.badInput);
    expect(cli.out).toContain(`${cli.dir} is not a twin's state dir`);
    expect(existsSync(html())).toBe(false);
  });

  it('writes the report of the cluster’s latest run once it has a history', async () => {
    await withHistory();
    expect(await report('--cluster-id', 'c1', '--out', html())).toBe(EXIT.ok);
    expect(cli.out).toContain(`report of upgrade up-1 (succeeded) written to ${html()}`);
    expect(existsSync(html())).toBe(true);
  });

  it('refuses an unwritable --out on upgrade before the run starts', async () => {
    const code = await main([
      ...['upgrade', '--cluster-id', 'c1', '--kubeconfig', path.join(cli.dir, 'no-kubeconfig')],
      ...[
        '--state-dir',
        path.join(cli.dir, 'state'),
        '--yes',
        '--report',
        path.join(cli.dir, 'missing', 'x.html'),
      ],
    ]);
    expect(code).toBe(EXIT.badInput);
    expect(cli.out).toContain('cannot write the report to');
  });
});
