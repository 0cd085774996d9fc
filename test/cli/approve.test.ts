/**
 * `ccm-migrate approve --aws` and `upgrade --aws --require-approval` against a mocked Step Functions: the
 * task token found in the execution's history (the gate's TaskScheduled event), the answer sent with it,
 * and the refusals (exit 2, nothing sent) when no gate waits.
 */
import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  ListExecutionsCommand,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  TaskTimedOut,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import type { StackTarget } from '../../lib/aws/stack-outputs.ts';
import { executionNameFor, runIdFor } from '../../lib/aws/starter.ts';
import { awsApproveCommand } from '../../lib/cli/approve.ts';
import { awsMigrationCommand } from '../../lib/cli/aws.ts';
import { CliError, EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import { textSink } from './text-sink.ts';

const UPGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
const DOWNGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Downgrade';
const RUN = runIdFor({ clusterId: 'c1', kind: 'upgrade', requestId: 'req-1' });
const EXECUTION = `${UPGRADE.replace(':stateMachine:', ':execution:')}:${executionNameFor('c1', RUN)}`;
const TOKEN = 'AQCEAAAAKgAAAAMAAAAAAAAAAfake-token';
const GATE = { resourceType: 'sns', resource: 'publish.waitForTaskToken' };

const sfn = mockClient(SFNClient);
beforeEach(() => {
  sfn.reset();
  // What main prints is kept out of the test output (the commands' own output is asserted through `out`).
  vi.spyOn(process.stdout, 'write').mockReturnValue(true);
  vi.spyOn(process.stderr, 'write').mockReturnValue(true);
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** The request the gate published, as the state machine builds it. */
const request = {
  kind: 'ApprovalRequested',
  clusterId: 'c1',
  runId: RUN,
  provider: 'aws',
  kubernetesVersion: 'v1.29.4',
  nodes: 5,
  taskToken: TOKEN,
  approve: `ccm-migrate approve --aws --cluster-id c1 --run-id ${RUN}`,
  reject: `ccm-migrate approve --aws --cluster-id c1 --run-id ${RUN} --reject --reason <why>`,
};

/**
 * An upgrade's history up to its waiting gate, oldest first; `message` as the TaskScheduled event's
 * parameters hold it (an object, or JSON text), then `after` (events after the gate was scheduled).
 */
function gateHistory(message: unknown = request, after: Partial<HistoryEvent>[] = []): HistoryEvent[] {
  const events: Partial<HistoryEvent>[] = [
    { type: 'ExecutionStarted' },
    { type: 'TaskStateEntered', stateEnteredEventDetails: { name: 'Check the cluster' } },
    { type: 'LambdaFunctionScheduled' },
    { type: 'LambdaFunctionSucceeded' },
    { type: 'TaskStateExited', stateExitedEventDetails: { name: 'Check the cluster' } },
    { type: 'ChoiceStateEntered', stateEnteredEventDetails: { name: 'Does this run need approval?' } },
    { type: 'ChoiceStateExited' },
    { type: 'TaskStateEntered', stateEnteredEventDetails: { name: 'Wait for approval' } },
    {
      type: 'TaskScheduled',
      taskScheduledEventDetails: {
        ...GATE,
        region: 'eu-west-1',
        parameters: JSON.stringify({
          TopicArn: 'arn:aws:sns:eu-west-1:111111111111:Notifications',
          Message: message,
          Subject: 'ccm-migrate: an upgrade waits for approval',
        }),
      },
    },
    { type: 'TaskStarted', taskStartedEventDetails: GATE },
    { type: 'TaskSubmitted', taskSubmittedEventDetails: { ...GATE, output: '{"MessageId":"m-1"}' } },
    ...after,
  ];
  return events.map(
    (e, i) => ({ id: i + 1, timestamp: new Date(Date.UTC(2026, 0, 1, 12, 0, i)), ...e }) as HistoryEvent,
  );
}

/** GetExecutionHistory over `history`, newest first when asked, in pages of `size`. */
function serveHistory(history: HistoryEvent[], size = 4): void {
  sfn.on(GetExecutionHistoryCommand).callsFake((input: { reverseOrder?: boolean; nextToken?: string }) => {
    const all = input.reverseOrder ? [...history].reverse() : history;
    const from = Number(input.nextToken ?? 0);
    return {
      events: all.slice(from, from + size),
      ...(from + size < all.length ? { nextToken: String(from + size) } : {}),
    };
  });
}

function listRunning(...clusters: string[]): void {
  sfn.on(ListExecutionsCommand).resolves({
    executions: clusters.map((c) => {
      const runId = runIdFor({ clusterId: c, kind: 'upgrade', requestId: 'req-1' });
      const name = executionNameFor(c, runId);
      return {
        name,
        executionArn: `${UPGRADE.replace(':stateMachine:', ':execution:')}:${name}`,
        stateMachineArn: UPGRADE,
        status: 'RUNNING',
        startDate: new Date(),
      };
    }),
  });
}

it("approves the cluster's running upgrade with the token its history holds, and prints no token", async () => {
  listRunning('c2', 'c1');
  serveHistory(gateHistory());
  sfn.on(SendTaskSuccessCommand).resolves({});
  const out = textSink();

  const answer = await awsApproveCommand({
    clusterId: 'c1',
    sfn: new SFNClient({}),
    target: { upgrade: UPGRADE },
    out,
  });

  expect(answer).toEqual({ answer: 'approved', runId: RUN, executionArn: EXECUTION });
  expect(sfn.commandCalls(ListExecutionsCommand)[0]?.args[0].input).toMatchObject({
    stateMachineArn: UPGRADE,
    statusFilter: 'RUNNING',
  });
  const history = sfn.commandCalls(GetExecutionHistoryCommand);
  expect(history[0]?.args[0].input).toMatchObject({
    executionArn: EXECUTION,
    reverseOrder: true,
    includeExecutionData: true,
  });
  // Newest first, the gate is in the first page: one read.
  expect(history).toHaveLength(1);
  expect(sfn.commandCalls(SendTaskSuccessCommand).map((c) => c.args[0].input)).toEqual([
    { taskToken: TOKEN, output: '{"approved":true}' },
  ]);
  expect(sfn.commandCalls(SendTaskFailureCommand)).toHaveLength(0);
  expect(out.text()).toContain(
    `approved upgrade run ${RUN} of cluster c1 (aws, Kubernetes v1.29.4, 5 nodes)`,
  );
  expect(out.text()).not.toContain(TOKEN);
});

it('rejects the run of --run-id with the reason, from the message as SNS serializes it, reading the history across pages', async () => {
  // Pages of 2, newest first: the gate's TaskScheduled is on the second.
  serveHistory(gateHistory(JSON.stringify(request)), 2);
  sfn.on(SendTaskFailureCommand).resolves({});

  const code = await main([
    ...`approve --aws --cluster-id c1 --run-id ${RUN} --state-machine-arn ${UPGRADE} --reject --reason`.split(
      ' ',
    ),
    'change freeze until Monday',
  ]);

  expect(code).toBe(EXIT.ok);
  expect(sfn.commandCalls(ListExecutionsCommand)).toHaveLength(0);
  expect(sfn.commandCalls(GetExecutionHistoryCommand)).toHaveLength(2);
  expect(
    sfn.commandCalls(GetExecutionHistoryCommand).every((c) => c.args[0].input.executionArn === EXECUTION),
  ).toBe(true);
  expect(sfn.commandCalls(SendTaskFailureCommand).map((c) => c.args[0].input)).toEqual([
    { taskToken: TOKEN, error: 'ApprovalRejected', cause: 'change freeze until Monday' },
  ]);
  expect(sfn.commandCalls(SendTaskSuccessCommand)).toHaveLength(0);
});

it('sends nothing and exits 2 when no gate waits: answered, ended, not reached, stale, or no running upgrade', async () => {
  const refused = async (history: HistoryEvent[], why: RegExp) => {
    sfn.reset();
    listRunning('c1');
    serveHistory(history);
    sfn.on(SendTaskSuccessCommand).rejects(new TaskTimedOut({ message: 'Task Timed Out', $metadata: {} }));
    const err = await awsApproveCommand({
      clusterId: 'c1',
      sfn: new SFNClient({}),
      target: { upgrade: UPGRADE },
      out: textSink(),
    }).catch((e: unknown) => e);
    expect(err, String(why)).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(EXIT.badInput);
    expect((err as CliError).message).toMatch(why);
    expect((err as CliError).message).not.toContain(TOKEN);
  };
  const answered = {
    type: 'TaskSucceeded',
    taskSucceededEventDetails: { ...GATE, output: '{"approved":true}' },
  };
  const entered = { type: 'TaskStateEntered', stateEnteredEventDetails: { name: 'Stage the CCM' } };
  await refused(
    gateHistory(request, [answered, entered] as Partial<HistoryEvent>[]),
    /answered or has timed out already/,
  );
  const timedOut = { type: 'TaskTimedOut', taskTimedOutEventDetails: { ...GATE, error: 'States.Timeout' } };
  await refused(
    gateHistory(request, [timedOut] as Partial<HistoryEvent>[]),
    /answered or has timed out already/,
  );
  await refused(gateHistory(request, [{ type: 'ExecutionAborted' }]), /it has ended \(ExecutionAborted\)/);
  await refused(gateHistory().slice(0, 4), /has not reached an approval gate/);
  // The history says it waits, Step Functions says the token answers nothing any more.
  await refused(gateHistory(), /no longer waits for approval \(TaskTimedOut\): nothing was answered/);
  expect(sfn.commandCalls(SendTaskSuccessCommand)).toHaveLength(1);

  sfn.reset();
  listRunning('c2');
  await expect(
    awsApproveCommand({
      clusterId: 'c1',
      sfn: new SFNClient({}),
      target: { upgrade: UPGRADE },
      out: textSink(),
    }),
  ).rejects.toMatchObject({
    exitCode: EXIT.badInput,
    message: 'no upgrade of cluster c1 is running: nothing to answer',
  });
  expect(sfn.commandCalls(GetExecutionHistoryCommand)).toHaveLength(0);
});

it('refuses bad flags before any AWS call', async () => {
  const target = ['--state-machine-arn', UPGRADE];
  expect(await main(['approve', '--cluster-id', 'c1', ...target])).toBe(EXIT.badInput);
  expect(await main(['approve', '--aws', '--cluster-id', 'c1', ...target, '--reason', 'why'])).toBe(
    EXIT.badInput,
  );
  expect(await main(['approve', '--aws', '--cluster-id', 'c1'])).toBe(EXIT.badInput);
  expect(await main(['approve', '--aws', '--cluster-id', 'c1', '--run-id', 'Not_A_Run', ...target])).toBe(
    EXIT.badInput,
  );
  expect(sfn.calls()).toHaveLength(0);
});

/** A stack on which a run starts and ends at once. */
function serveQuickRun(): void {
  sfn.on(ListExecutionsCommand).resolves({ executions: [] });
  sfn.on(StartExecutionCommand).resolves({ executionArn: EXECUTION, startDate: new Date() });
  sfn
    .on(DescribeExecutionCommand)
    .resolves({ status: 'SUCCEEDED', startDate: new Date(), stopDate: new Date() });
  serveHistory([]);
}

/** What the CLI prints for a run of `kind` that requires approval, started on `target`. */
async function startedRequiringApproval(kind: 'upgrade' | 'downgrade', target: StackTarget): Promise<string> {
  const out = textSink();
  await awsMigrationCommand({
    kind,
    clusterId: 'c1',
    sfn: new SFNClient({}),
    target,
    maxUnavailable: 1,
    options: { requireApproval: true },
    requestId: 'req-1',
    yes: true,
    out,
  });
  return out.text();
}

it('starts an upgrade that requires approval and says how to answer it', async () => {
  serveQuickRun();

  const code = await main(
    `upgrade --aws --cluster-id c1 --state-machine-arn ${UPGRADE} --request-id req-1 --require-approval --yes`.split(
      ' ',
    ),
  );

  expect(code).toBe(EXIT.ok);
  expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input).toEqual({
    stateMachineArn: UPGRADE,
    name: executionNameFor('c1', RUN),
    input: JSON.stringify({
      clusterId: 'c1',
      runId: RUN,
      maxUnavailable: 1,
      options: { requireApproval: true },
    }),
  });

  expect(await startedRequiringApproval('upgrade', { upgrade: UPGRADE })).toContain(
    `after preflight it waits for: ccm-migrate approve --aws --cluster-id c1 --run-id ${RUN}`,
  );
});

it('starts a downgrade that requires approval and says how to answer it (--downgrade)', async () => {
  serveQuickRun();
  const printed = await startedRequiringApproval('downgrade', { downgrade: DOWNGRADE });

  const started = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input;
  expect(started?.stateMachineArn).toBe(DOWNGRADE);
  expect(JSON.parse(started?.input ?? '{}')).toMatchObject({ options: { requireApproval: true } });
  expect(printed).toContain(
    'after preflight it waits for: ccm-migrate approve --aws --downgrade --cluster-id c1',
  );
});

it("answers a downgrade's gate with --downgrade, on the downgrade machine's execution", async () => {
  const runId = runIdFor({ clusterId: 'c1', kind: 'downgrade', requestId: 'req-1' });
  serveHistory(gateHistory({ ...request, migration: 'downgrade', runId }));
  sfn.on(SendTaskSuccessCommand).resolves({});

  const code = await main([
    'approve',
    '--aws',
    '--downgrade',
    '--cluster-id',
    'c1',
    '--run-id',
    runId,
    '--state-machine-arn',
    DOWNGRADE,
  ]);

  expect(code).toBe(EXIT.ok);
  expect(sfn.commandCalls(GetExecutionHistoryCommand)[0]?.args[0].input.executionArn).toBe(
    `${DOWNGRADE.replace(':stateMachine:', ':execution:')}:${executionNameFor('c1', runId)}`,
  );
  expect(sfn.commandCalls(SendTaskSuccessCommand)[0]?.args[0].input.taskToken).toBe(TOKEN);
});
