/**
 * `ccm-migrate upgrade|downgrade|status --aws` against a mocked Step Functions (no AWS account here): the
 * calls it makes (names, inputs, execution names as the starter makes them), the progress it prints from an
 * execution's history, its summary and its exit codes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ExecutionAlreadyExists,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { STACK_OUTPUTS } from '../../lib/aws/stack-outputs.ts';
import { executionNameFor, runIdFor } from '../../lib/aws/starter.ts';
import { awsMigrationCommand } from '../../lib/cli/aws.ts';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { joinSourcesNote } from '../../lib/cli/join-sources.ts';
import { main } from '../../lib/cli/main.ts';

const UPGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
const DOWNGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Downgrade';
const execArn = (machine: string, name: string) =>
  `${machine.replace(':stateMachine:', ':execution:')}:${name}`;

const sfn = mockClient(SFNClient);
const events = mockClient(EventBridgeClient);
let dir: string;
let outputs: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-aws-'));
  outputs = path.join(dir, 'outputs.json');
  await writeFile(
    outputs,
    JSON.stringify({
      Other: { Something: 'else' },
      CcmMigrate: {
        [STACK_OUTPUTS.upgrade]: UPGRADE,
        [STACK_OUTPUTS.downgrade]: DOWNGRADE,
        [STACK_OUTPUTS.bus]: 'CcmMigrate-ccm-migrate',
      },
    }),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  sfn.reset();
  events.reset();
  events.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: '1' }] });
  sfn.on(ListExecutionsCommand).resolves({ executions: [] });
});

let id = 0;
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, s));
const event = (type: string, s: number, extra: Partial<HistoryEvent> = {}): HistoryEvent => {
  id += 1;
  return { id, type: type as HistoryEvent['type'], timestamp: at(s), ...extra };
};
const entered = (type: string, name: string, s: number, input: object = { clusterId: 'c1' }) =>
  event(type, s, { stateEnteredEventDetails: { name, input: JSON.stringify(input) } });

/** An upgrade of three control-plane nodes as Step Functions records it, up to verification. */
function upgradeHistory(): HistoryEvent[] {
  id = 0;
  const node = (n: string, s: number) => [
    event('MapIterationStarted', s, { mapIterationStartedEventDetails: { name: 'Control plane', index: 0 } }),
    entered('TaskStateEntered', 'Move control-plane node', s, { clusterId: 'c1', runId: 'r', node: n }),
    event('LambdaFunctionScheduled', s),
    event('LambdaFunctionSucceeded', s + 1),
    event('TaskStateExited', s + 1),
    event('MapIterationSucceeded', s + 1),
  ];
  return [
    event('ExecutionStarted', 0),
    entered('TaskStateEntered', 'Check the cluster', 0),
    event('LambdaFunctionScheduled', 0),
    event('LambdaFunctionSucceeded', 2),
    event('TaskStateExited', 2),
    entered('ChoiceStateEntered', 'Nothing to do?', 2),
    event('ChoiceStateExited', 2),
    entered('TaskStateEntered', 'Stage the CCM', 3),
    event('TaskStateExited', 4),
    entered('MapStateEntered', 'Control plane', 4),
    event('MapStateStarted', 4),
    ...node('cp-1', 5),
    ...node('cp-2', 7),
    ...node('cp-3', 9),
    event('MapStateSucceeded', 11),
    event('MapStateExited', 11),
    entered('TaskStateEntered', 'Verify', 11),
    event('TaskStateExited', 12),
  ];
}

/** Step Functions' GetExecutionHistory over `history()`, in either order, in pages of `pageSize`. */
function serveHistory(history: () => HistoryEvent[], pageSize = 7): void {
  sfn.on(GetExecutionHistoryCommand).callsFake((input: { reverseOrder?: boolean; nextToken?: string }) => {
    const all = input.reverseOrder ? [...history()].reverse() : history();
    const from = Number(input.nextToken ?? 0);
    const page = all.slice(from, from + pageSize);
    return {
      events: page,
      ...(from + pageSize < all.length ? { nextToken: String(from + pageSize) } : {}),
    };
  });
}

function describeAs(...answers: Partial<DescribeExecutionCommandOutput>[]): void {
  let call = 0;
  sfn.on(DescribeExecutionCommand).callsFake(() => {
    const answer = answers[Math.min(call, answers.length - 1)];
    call += 1;
    return { startDate: at(0), ...answer };
  });
}

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    err += String(chunk);
    return true;
  });
  try {
    const code = await main(args);
    return { code, out, err };
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
}

/** Progress lines without their elapsed-time stamps. */
const lines = (out: string) => out.split('\n').map((l) => l.replace(/^\[ *[\d.]+ s\] /, ''));

it('starts an upgrade named as the starter names it, announces it, prints its progress and succeeds', async () => {
  const history = upgradeHistory();
  const ended = [...history, entered('TaskStateEntered', 'Record the result', 12)];
  ended.push(entered('SucceedStateEntered', 'Succeeded', 13), event('ExecutionSucceeded', 13));
  serveHistory(() => ended);
  const runId = runIdFor({ clusterId: 'c1', kind: 'upgrade', requestId: 'req-1' });
  const name = executionNameFor('c1', runId);
  sfn.on(StartExecutionCommand).resolves({ executionArn: execArn(UPGRADE, name), startDate: at(0) });
  describeAs({
    status: 'SUCCEEDED',
    stopDate: at(13),
    output: JSON.stringify({ clusterId: 'c1', verification: { nodes: 3 } }),
  });

  const { code, out } = await run([
    'upgrade',
    '--aws',
    '--cluster-id',
    'c1',
    '--stack-outputs',
    outputs,
    '--request-id',
    'req-1',
    '--max-unavailable',
    '2',
    '--provider',
    'aws',
    '--yes',
  ]);

  expect(code).toBe(EXIT.ok);
  expect(sfn.commandCalls(ListExecutionsCommand)[0]?.args[0].input).toMatchObject({
    stateMachineArn: UPGRADE,
    statusFilter: 'RUNNING',
  });
  const start = sfn.commandCalls(StartExecutionCommand);
  expect(start).toHaveLength(1);
  expect(start[0]?.args[0].input).toEqual({
    stateMachineArn: UPGRADE,
    name,
    input: JSON.stringify({ clusterId: 'c1', runId, maxUnavailable: 2, options: { provider: 'aws' } }),
  });
  const put = events.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries?.[0];
  expect(put).toMatchObject({ EventBusName: 'CcmMigrate-ccm-migrate', DetailType: 'MigrationStarted' });
  expect(JSON.parse(put?.Detail ?? '{}')).toEqual({
    clusterId: 'c1',
    runId,
    kind: 'upgrade',
    requestId: 'req-1',
    executionArn: execArn(UPGRADE, name),
  });
  expect(
    sfn
      .commandCalls(DescribeExecutionCommand)
      .every((c) => c.args[0].input.executionArn === execArn(UPGRADE, name)),
  ).toBe(true);
  expect(lines(out)).toEqual([
    `started upgrade run ${runId} of cluster c1 (request req-1)`,
    `  ${execArn(UPGRADE, name)}`,
    '▶ Check the cluster',
    '▶ Nothing to do?',
    '▶ Stage the CCM',
    '▶ Control plane',
    '  Move control-plane node cp-1: started',
    '  Move control-plane node cp-2: started',
    '  Move control-plane node cp-3: started',
    '▶ Verify',
    '▶ Record the result',
    '▶ Succeeded',
    '',
    `upgrade succeeded: cluster c1, run ${runId}`,
    `  execution:         ${execArn(UPGRADE, name)}`,
    '  duration:          13.0 s',
    '  nodes:             3',
    '  states entered:    10',
    '',
    ...lines(joinSourcesNote()),
  ]);
});

it('ends a rolled-back upgrade with exit code 9, its cause in the summary and on stderr', async () => {
  const history = upgradeHistory();
  const ended = [
    ...history,
    event('LambdaFunctionFailed', 12, {
      lambdaFunctionFailedEventDetails: { error: 'VerificationFailed', cause: 'w1 has no providerID' },
    }),
    entered('ChoiceStateEntered', 'Changed anything?', 12),
    entered('TaskStateEntered', 'Restore kubelets', 12),
    entered('FailStateEntered', 'Rolled back', 20),
    event('ExecutionFailed', 20, { executionFailedEventDetails: { error: 'RolledBack' } }),
  ];
  serveHistory(() => ended);
  sfn.on(StartExecutionCommand).resolves({ executionArn: execArn(UPGRADE, 'x'), startDate: at(0) });
  describeAs({
    status: 'FAILED',
    stopDate: at(20),
    error: 'RolledBack',
    cause: 'VerificationFailed: w1 has no providerID',
  });

  const { code, out, err } = await run([
    'upgrade',
    '--aws',
    '--cluster-id',
    'c1',
    '--stack-outputs',
    outputs,
    '--yes',
  ]);

  expect(code).toBe(EXIT.rolledBack);
  // A request id of its own: a valid run id and execution name for each invocation.
  expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.name).toMatch(/^up-[0-9a-f]{16}-c1$/);
  const printed = lines(out);
  expect(printed).toContain('▶ Changed anything?');
  expect(printed).toContain('▶ Rolled back');
  expect(printed.find((l) => l.startsWith('upgrade failed'))).toMatch(
    /^upgrade failed: cluster c1, run up-[0-9a-f]{16}$/,
  );
  expect(printed).toContain('  error:             RolledBack: VerificationFailed: w1 has no providerID');
  expect(err).toBe('ccm-migrate: RolledBack: VerificationFailed: w1 has no providerID\n');
});

it('follows the cluster’s running execution instead of starting one, reading each history event once', async () => {
  const runId = runIdFor({ clusterId: 'c1', kind: 'downgrade', requestId: 'earlier' });
  const name = executionNameFor('c1', runId);
  const other = executionNameFor('c1-b', runIdFor({ clusterId: 'c1-b', kind: 'downgrade', requestId: 'x' }));
  sfn.on(ListExecutionsCommand).resolves({
    executions: [
      // Another cluster whose id starts with this one's: not ours.
      {
        name: other,
        executionArn: execArn(DOWNGRADE, other),
        status: 'RUNNING',
        stateMachineArn: DOWNGRADE,
        startDate: at(0),
      },
      {
        name,
        executionArn: execArn(DOWNGRADE, name),
        status: 'RUNNING',
        stateMachineArn: DOWNGRADE,
        startDate: at(0),
      },
    ],
  });
  id = 0;
  const full = [
    event('ExecutionStarted', 0),
    entered('TaskStateEntered', 'Check the cluster', 0),
    event('TaskStateExited', 1),
    entered('TaskStateEntered', 'Stop the CCM', 1),
    event('TaskStateExited', 2),
    entered('SucceedStateEntered', 'Succeeded', 2),
    event('ExecutionSucceeded', 2),
  ];
  let visible = 3;
  serveHistory(() => full.slice(0, visible), 2);
  let describes = 0;
  sfn.on(DescribeExecutionCommand).callsFake(() => {
    describes += 1;
    // The execution moves on between two looks.
    if (describes === 1) return { status: 'RUNNING', startDate: at(0) };
    visible = full.length;
    return { status: 'SUCCEEDED', startDate: at(0), stopDate: at(2) };
  });
  let out = '';
  const result = await awsMigrationCommand({
    kind: 'downgrade',
    clusterId: 'c1',
    sfn: new SFNClient({}),
    target: { upgrade: UPGRADE, downgrade: DOWNGRADE },
    maxUnavailable: 1,
    options: {},
    yes: false,
    confirm: () => Promise.reject(new Error('a running execution needs no confirmation')),
    pollMs: 1,
    out: new Writable({
      write(chunk, _enc, done) {
        out += String(chunk);
        done();
      },
    }),
  });
  expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
  expect(sfn.commandCalls(ListExecutionsCommand)[0]?.args[0].input.stateMachineArn).toBe(DOWNGRADE);
  expect(result).toMatchObject({
    status: 'SUCCEEDED',
    runId,
    started: false,
    executionArn: execArn(DOWNGRADE, name),
  });
  expect(lines(out).filter((l) => l.startsWith('▶'))).toEqual([
    '▶ Check the cluster',
    '▶ Stop the CCM',
    '▶ Succeeded',
  ]);
  expect(out).toContain(`downgrade succeeded: cluster c1, run ${runId} (followed)`);
  // Newest first, stopping at what was seen: each poll read only the new events.
  for (const call of sfn.commandCalls(GetExecutionHistoryCommand)) {
    expect(call.args[0].input).toMatchObject({ executionArn: execArn(DOWNGRADE, name), reverseOrder: true });
  }
});

it('follows the execution of a repeated request id without announcing it again', async () => {
  sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
  serveHistory(() => [event('ExecutionStarted', 0), event('ExecutionAborted', 5)]);
  describeAs({ status: 'ABORTED', stopDate: at(5) });
  const { code, out } = await run([
    'downgrade',
    '--aws',
    '--cluster-id',
    'c1',
    '--stack-outputs',
    outputs,
    '--request-id',
    'req-1',
    '--yes',
  ]);
  const name = executionNameFor('c1', runIdFor({ clusterId: 'c1', kind: 'downgrade', requestId: 'req-1' }));
  expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input).toMatchObject({
    stateMachineArn: DOWNGRADE,
    name,
  });
  expect(sfn.commandCalls(DescribeExecutionCommand)[0]?.args[0].input.executionArn).toBe(
    execArn(DOWNGRADE, name),
  );
  expect(events.commandCalls(PutEventsCommand)).toHaveLength(0);
  expect(out).toContain(`following downgrade run`);
  expect(code).toBe(EXIT.failed);
});

it('exits 8 for a timed-out execution, on the machine given by --state-machine-arn', async () => {
  sfn.on(StartExecutionCommand).resolves({ executionArn: execArn(UPGRADE, 'x'), startDate: at(0) });
  serveHistory(() => [event('ExecutionStarted', 0), event('ExecutionTimedOut', 9)]);
  describeAs({ status: 'TIMED_OUT', stopDate: at(9) });
  const { code } = await run([
    'upgrade',
    '--aws',
    '--cluster-id',
    'c1',
    '--state-machine-arn',
    UPGRADE,
    '--yes',
  ]);
  expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.stateMachineArn).toBe(UPGRADE);
  expect(code).toBe(EXIT.timedOut);
});

it('refuses before any AWS call: no stack named, an unreadable outputs file, or no confirmation', async () => {
  const noStack = await run(['upgrade', '--aws', '--cluster-id', 'c1', '--yes']);
  expect(noStack).toMatchObject({ code: EXIT.badInput });
  expect(noStack.err).toContain('--stack-outputs');
  const badFile = await run([
    'upgrade',
    '--aws',
    '--cluster-id',
    'c1',
    '--stack-outputs',
    path.join(dir, 'none.json'),
    '--yes',
  ]);
  expect(badFile.code).toBe(EXIT.badInput);
  const local = await run([
    'upgrade',
    '--aws',
    '--cluster-id',
    'c1',
    '--stack-outputs',
    outputs,
    '--kubeconfig',
    '/k',
    '--yes',
  ]);
  expect(local).toMatchObject({ code: EXIT.badInput });
  expect(local.err).toContain('--kubeconfig do not apply with --aws');
  const noStatus = await run(['status', '--cluster-id', 'c1']);
  expect(noStatus.code).toBe(EXIT.badInput);
  expect(sfn.calls()).toHaveLength(0);

  await expect(
    awsMigrationCommand({
      kind: 'upgrade',
      clusterId: 'c1',
      sfn: new SFNClient({}),
      target: { upgrade: UPGRADE },
      maxUnavailable: 1,
      options: {},
      yes: false,
      confirm: async () => false,
      out: new Writable({ write: (_c, _e, done) => done() }),
    }),
  ).rejects.toMatchObject({ exitCode: EXIT.badInput });
  expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
});

it('lists the cluster’s runs of both machines, newest first, and no other cluster’s', async () => {
  const up = executionNameFor('c1', runIdFor({ clusterId: 'c1', kind: 'upgrade', requestId: 'a' }));
  const down = executionNameFor('c1', runIdFor({ clusterId: 'c1', kind: 'downgrade', requestId: 'b' }));
  const theirs = executionNameFor('c2', runIdFor({ clusterId: 'c2', kind: 'upgrade', requestId: 'a' }));
  sfn
    .on(ListExecutionsCommand, { stateMachineArn: UPGRADE })
    .resolvesOnce({
      executions: [
        {
          name: theirs,
          executionArn: execArn(UPGRADE, theirs),
          status: 'SUCCEEDED',
          stateMachineArn: UPGRADE,
          startDate: at(3),
        },
      ],
      nextToken: 'page-2',
    })
    .resolves({
      executions: [
        {
          name: up,
          executionArn: execArn(UPGRADE, up),
          status: 'FAILED',
          stateMachineArn: UPGRADE,
          startDate: at(1),
          stopDate: at(2),
        },
        {
          name: 'made-by-hand',
          executionArn: execArn(UPGRADE, 'made-by-hand'),
          status: 'SUCCEEDED',
          stateMachineArn: UPGRADE,
          startDate: at(5),
        },
      ],
    });
  sfn.on(ListExecutionsCommand, { stateMachineArn: DOWNGRADE }).resolves({
    executions: [
      {
        name: down,
        executionArn: execArn(DOWNGRADE, down),
        status: 'RUNNING',
        stateMachineArn: DOWNGRADE,
        startDate: at(4),
      },
    ],
  });
  const { code, out } = await run(['status', '--aws', '--cluster-id', 'c1', '--stack-outputs', outputs]);
  expect(code).toBe(EXIT.ok);
  expect(
    sfn
      .commandCalls(ListExecutionsCommand)
      .map((c) => [c.args[0].input.stateMachineArn, c.args[0].input.nextToken]),
  ).toEqual(
    expect.arrayContaining([
      [UPGRADE, undefined],
      [UPGRADE, 'page-2'],
      [DOWNGRADE, undefined],
    ]),
  );
  const rows = out.trim().split('\n');
  expect(rows[0]).toBe('runs of cluster c1, newest first:');
  expect(rows.slice(1).map((r) => r.trim().split(/\s+/).slice(0, 3))).toEqual([
    [down.slice(0, -3), 'downgrade', 'RUNNING'],
    [up.slice(0, -3), 'upgrade', 'FAILED'],
  ]);
});
