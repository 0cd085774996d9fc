/**
 * `ccm-migrate report` on bad input: an unknown cluster or run, a run without a history, a directory that is
 * not a twin's, an --out nobody can write. Each is one line, exit 2, no stack trace and no file written.
 * And `report --aws` against a mocked Step Functions: an execution's history in the shape GetExecutionHistory
 * gives it (each event naming the one before it in its thread, a Map's iterations interleaved, a failed
 * attempt and its retry), paged newest first, drawn as the local engine's history is.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  GetExecutionHistoryCommand,
  type HistoryEvent,
  ListExecutionsCommand,
  SFNClient,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { executionNameFor, runIdFor } from '../../lib/aws/starter.ts';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import { awsRunReport } from '../../lib/cli/report.ts';
import type { HistoryEntry } from '../../lib/local/history.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { UPGRADE_STATES as U } from '../../state-machines/upgrade.ts';
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

const UPGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
const RUN = runIdFor({ clusterId: 'c1', kind: 'upgrade', requestId: 'r1' });
const EXECUTION = `${UPGRADE.replace(':stateMachine:', ':execution:')}:${executionNameFor('c1', RUN)}`;
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

const sfn = mockClient(SFNClient);

/** An upgrade's history up to its kubelets, two flipped at once, w-1's first attempt failing NotReadyYet. */
function executionHistory(): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  const add = (ms: number, type: string, previous: number, extra: Partial<HistoryEvent> = {}): number => {
    const id = events.length + 1;
    events.push({
      id,
      previousEventId: previous,
      timestamp: new Date(T0 + ms),
      type: type as HistoryEvent['type'],
      ...extra,
    });
    return id;
  };
  const enter = (ms: number, type: string, name: string, previous: number, input: object): number =>
    add(ms, type, previous, { stateEnteredEventDetails: { name, input: JSON.stringify(input) } });
  const exit = (ms: number, type: string, name: string, previous: number): number =>
    add(ms, type, previous, { stateExitedEventDetails: { name, output: '{}' } });
  const ids = { clusterId: 'c1', runId: RUN };

  const started = add(0, 'ExecutionStarted', 0, {
    executionStartedEventDetails: { input: JSON.stringify({ ...ids, maxUnavailable: 2, options: {} }) },
  });
  let p = enter(10, 'TaskStateEntered', U.preflight, started, ids);
  p = add(11, 'TaskScheduled', p);
  p = add(12, 'TaskStarted', p);
  p = add(900, 'TaskSucceeded', p);
  p = exit(900, 'TaskStateExited', U.preflight, p);
  p = enter(900, 'ChoiceStateEntered', U.nothingToDo, p, ids);
  p = exit(901, 'ChoiceStateExited', U.nothingToDo, p);
  const map = enter(1000, 'MapStateEntered', U.kubelets, p, ids);
  const mapStarted = add(1000, 'MapStateStarted', map, { mapStateStartedEventDetails: { length: 2 } });
  const iteration = (index: number) =>
    add(1001, 'MapIterationStarted', mapStarted, {
      mapIterationStartedEventDetails: { name: U.kubelets, index },
    });
  const it0 = iteration(0);
  const it1 = iteration(1);
  let w1 = enter(1002, 'TaskStateEntered', U.flipKubelet, it0, { ...ids, node: 'w-1' });
  let w2 = enter(1002, 'TaskStateEntered', U.flipKubelet, it1, { ...ids, node: 'w-2' });
  w1 = add(1003, 'TaskScheduled', w1);
  w2 = add(1003, 'TaskScheduled', w2);
  w1 = add(1004, 'TaskStarted', w1);
  w2 = add(1004, 'TaskStarted', w2);
  w1 = add(2000, 'TaskFailed', w1, {
    taskFailedEventDetails: {
      resourceType: 'lambda',
      resource: 'invoke',
      error: 'NotReadyYet',
      cause: 'node w-1 is not Ready yet',
    },
  });
  w2 = add(2500, 'TaskSucceeded', w2);
  w2 = exit(2500, 'TaskStateExited', U.flipKubelet, w2);
  w2 = add(2500, 'MapIterationSucceeded', w2, { mapIterationSucceededEventDetails: { index: 1 } });
  w1 = add(4000, 'TaskScheduled', w1);
  w1 = add(4001, 'TaskStarted', w1);
  w1 = add(5000, 'TaskSucceeded', w1);
  w1 = exit(5000, 'TaskStateExited', U.flipKubelet, w1);
  w1 = add(5000, 'MapIterationSucceeded', w1, { mapIterationSucceededEventDetails: { index: 0 } });
  p = add(5001, 'MapStateSucceeded', w1);
  p = exit(5001, 'MapStateExited', U.kubelets, p);
  p = enter(5100, 'TaskStateEntered', U.verify, p, ids);
  p = exit(5600, 'TaskStateExited', U.verify, p);
  add(5700, 'ExecutionSucceeded', p, { executionSucceededEventDetails: { output: '{}' } });
  return events;
}

beforeEach(() => {
  sfn.reset();
  sfn.on(ListExecutionsCommand).resolves({
    executions: [
      {
        executionArn: EXECUTION,
        stateMachineArn: UPGRADE,
        name: executionNameFor('c1', RUN),
        status: 'SUCCEEDED',
        startDate: new Date(T0),
        stopDate: new Date(T0 + 5700),
      },
    ],
  });
  // Pages of five, newest first, as the CLI asks.
  sfn.on(GetExecutionHistoryCommand).callsFake((input: { reverseOrder?: boolean; nextToken?: string }) => {
    const all = input.reverseOrder ? executionHistory().reverse() : executionHistory();
    const from = Number(input.nextToken ?? 0);
    return {
      events: all.slice(from, from + 5),
      ...(from + 5 < all.length ? { nextToken: String(from + 5) } : {}),
    };
  });
});

describe('ccm-migrate report --aws', () => {
  it('draws each node’s step from its own iteration, a failed attempt as the wait before its retry', async () => {
    const report = await awsRunReport({
      clusterId: 'c1',
      sfn: sfn as unknown as SFNClient,
      target: { upgrade: UPGRADE },
    });
    const lane = (title: string) => report.lanes.find((l) => l.title === title)?.spans;
    expect(lane('w-1')?.map((s) => [s.kind, s.label, s.startMs, s.endMs])).toEqual([
      ['step', U.flipKubelet, 1002, 5000],
      ['wait', 'waiting to retry after NotReadyYet', 2000, 4000],
    ]);
    expect(lane('w-2')?.map((s) => [s.kind, s.startMs, s.endMs])).toEqual([['step', 1002, 2500]]);
    expect(lane('Workflow')?.map((s) => s.label)).toEqual([U.preflight, U.kubelets, U.verify]);
    expect(report).toMatchObject({
      outcome: 'succeeded',
      durationMs: 5700,
      maxUnavailable: 2,
      // Six states entered (preflight, the choice, the map, two flips, verify) and the retry.
      transitions: 7,
    });
    expect(report.apiRequests).toBeUndefined();
    expect(report.notes.join(' ')).toMatch(/no run record was read/);
  });

  it('takes the outcome and the node files from the run table’s record when there is one', async () => {
    const store = new LocalRunStore(path.join(cli.dir, 'aws-table'));
    await store.begin({ clusterId: 'c1', runId: RUN, kind: 'upgrade' });
    await store.setSnapshotOnce('c1', RUN, {
      nodes: { 'w-1': { role: 'worker' }, 'w-2': { role: 'worker' } },
      files: { 'w-1': [{ path: '/var/lib/kubelet/kubeadm-flags.env', exists: true, sha256: 'abc123' }] },
    });
    await store.finish('c1', RUN, { status: 'rolled-back', error: { name: 'RolledBack', message: 'x' } });
    const report = await awsRunReport({
      clusterId: 'c1',
      sfn: sfn as unknown as SFNClient,
      target: { upgrade: UPGRADE },
      store,
    });
    expect(report.outcome).toBe('rolled-back');
    expect(report.files.map((f) => [f.node, f.files.map((x) => x.before?.sha256)])).toEqual([
      ['w-1', ['abc123']],
    ]);
    expect(report.notes.join(' ')).not.toMatch(/no run record/);
  });

  it('writes the HTML from the command line, and refuses a run the stack does not have', async () => {
    const out = path.join(cli.dir, 'run.html');
    const args = ['report', '--aws', '--cluster-id', 'c1', '--state-machine-arn', UPGRADE, '--out', out];
    expect(await main(args)).toBe(EXIT.ok);
    expect(await readFile(out, 'utf8')).toContain('data-lane="w-1"');
    expect(await main([...args, '--run-id', 'up-0000000000000000'])).toBe(EXIT.badInput);
    expect(cli.out).toContain('no run up-0000000000000000 of cluster c1');
    expect(await main([...args, '--state-dir', cli.dir])).toBe(EXIT.badInput);
    expect(cli.out).toContain('--state-dir do not apply with --aws');
  });
});
