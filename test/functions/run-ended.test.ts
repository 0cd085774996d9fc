/**
 * The run-ended function: an execution that ended outside our Catch releases its cluster (its record
 * finished as failed in a real DynamoDB, dynalite on loopback), and every ending is announced on the bus
 * with the detail its schema gives.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { lambdaHandler } from '../../lib/aws/handler.ts';
import { onRunEnded } from '../../lib/aws/run-ended.ts';
import { OUTGOING_EVENTS } from '../../lib/events.ts';
import { DynamoRunStore } from '../../lib/store/dynamo-store.ts';
import { type Dynalite, startDynalite } from '../store/dynalite.ts';
import { capturedLogger } from './captured-logger.ts';

const UPGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
const DOWNGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Downgrade';
const env = {
  EVENT_BUS_NAME: 'ccm-migrate-bus',
  UPGRADE_STATE_MACHINE_ARN: UPGRADE,
  DOWNGRADE_STATE_MACHINE_ARN: DOWNGRADE,
};

const bus = mockClient(EventBridgeClient);
const events = new EventBridgeClient({ region: 'eu-west-1' });
let db: Dynalite;
let store: DynamoRunStore;
const logs: string[] = [];

beforeAll(async () => {
  db = await startDynalite();
});
afterAll(async () => {
  await db?.close();
});
beforeEach(async () => {
  bus.reset();
  bus.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: '1' }] });
  store = new DynamoRunStore({ client: db.client(), tableName: await db.table() });
  logs.length = 0;
});

const logger = capturedLogger(logs);
const handler = lambdaHandler(
  'run-ended',
  (event) => onRunEnded(event, { store, events, env, logger }),
  logger,
);

/** The RunsEnded metric lines (Embedded Metric Format) the invocations wrote: their Kind and Outcome. */
const counted = () =>
  logs
    .map(
      (l) =>
        JSON.parse(l) as {
          _aws?: { CloudWatchMetrics: { Namespace: string; Metrics: { Name: string }[] }[] };
          Kind?: string;
          Outcome?: string;
          RunsEnded?: number;
        },
    )
    .filter((l) => l._aws?.CloudWatchMetrics[0]?.Metrics[0]?.Name === 'RunsEnded' && l.RunsEnded === 1)
    .map((l) => `${l._aws?.CloudWatchMetrics[0]?.Namespace} ${l.Kind} ${l.Outcome}`);

function ended(
  status: 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED',
  extra: { error?: string; cause?: string; stateMachineArn?: string; runId?: string } = {},
) {
  const stateMachineArn = extra.stateMachineArn ?? UPGRADE;
  const runId = extra.runId ?? 'up-1';
  return {
    version: '0',
    source: 'aws.states',
    'detail-type': 'Step Functions Execution Status Change',
    detail: {
      executionArn: `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${runId}-c1`,
      stateMachineArn,
      status,
      input: JSON.stringify({ clusterId: 'c1', runId, maxUnavailable: 1, options: {} }),
      error: extra.error ?? null,
      cause: extra.cause ?? null,
    },
  };
}

/** The one event put on the bus, checked against its own schema as a consumer would. */
function published() {
  const calls = bus.commandCalls(PutEventsCommand);
  expect(calls).toHaveLength(1);
  const entries = calls[0]?.args[0].input.Entries ?? [];
  expect(entries).toHaveLength(1);
  const entry = entries[0];
  expect(entry).toMatchObject({ EventBusName: 'ccm-migrate-bus', Source: 'ccm-migrate' });
  const type = entry?.DetailType as keyof typeof OUTGOING_EVENTS;
  const event = OUTGOING_EVENTS[type].parse({
    source: entry?.Source,
    'detail-type': type,
    detail: JSON.parse(entry?.Detail ?? 'null'),
  });
  return { type, detail: event.detail as Record<string, unknown> };
}

it('releases a cluster whose run was still running when its execution failed, and says MigrationFailed', async () => {
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  const out = await handler(
    ended('FAILED', { error: 'States.Timeout', cause: 'Task timed out after 900 seconds' }),
    {} as never,
  );
  expect(out).toEqual({ released: true });
  expect(await store.current('c1')).toBeUndefined();
  expect(await store.get('c1', 'up-1')).toMatchObject({
    status: 'failed',
    error: { name: 'States.Timeout', message: 'Task timed out after 900 seconds' },
  });
  expect(published()).toEqual({
    type: 'MigrationFailed',
    detail: {
      clusterId: 'c1',
      runId: 'up-1',
      kind: 'upgrade',
      executionArn: `${UPGRADE.replace(':stateMachine:', ':execution:')}:up-1-c1`,
      status: 'FAILED',
      error: 'States.Timeout',
      cause: 'Task timed out after 900 seconds',
    },
  });
  expect(counted()).toEqual(['ccm-migrate upgrade failed']);
  // A new run of the cluster can start: the lock is gone, not just the record marked.
  await expect(store.begin({ clusterId: 'c1', runId: 'up-2', kind: 'upgrade' })).resolves.toMatchObject({
    status: 'running',
  });
});

it('names an aborted or timed-out run by its status when Step Functions gives no error, kind from the machine', async () => {
  for (const [status, runId] of [
    ['ABORTED', 'down-1'],
    ['TIMED_OUT', 'down-2'],
  ] as const) {
    bus.resetHistory();
    await store.begin({ clusterId: 'c1', runId, kind: 'downgrade' });
    const out = await handler(ended(status, { stateMachineArn: DOWNGRADE, runId }), {} as never);
    expect(out).toEqual({ released: true });
    expect(await store.get('c1', runId)).toMatchObject({
      status: 'failed',
      error: { name: status, message: `execution ${status}` },
    });
    const { type, detail } = published();
    expect(type).toBe('MigrationFailed');
    expect(detail).toMatchObject({ kind: 'downgrade', runId, status });
    expect(detail).not.toHaveProperty('error');
    expect(detail).not.toHaveProperty('cause');
  }
  expect(counted()).toEqual(['ccm-migrate downgrade failed', 'ccm-migrate downgrade failed']);
});

it('leaves a run our Catch recorded as rolled back alone, and says MigrationRolledBack with its cause', async () => {
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  const rolledBack = await store.finish('c1', 'up-1', {
    status: 'rolled-back',
    error: { name: 'AgentFailed', message: 'kubelet on w1 did not come back' },
  });
  const out = await handler(
    ended('FAILED', { error: 'RolledBack', cause: 'AgentFailed: kubelet on w1 did not come back' }),
    {} as never,
  );
  expect(out).toEqual({ released: false });
  expect(await store.get('c1', 'up-1')).toEqual(rolledBack);
  expect(published()).toEqual({
    type: 'MigrationRolledBack',
    detail: {
      clusterId: 'c1',
      runId: 'up-1',
      kind: 'upgrade',
      executionArn: `${UPGRADE.replace(':stateMachine:', ':execution:')}:up-1-c1`,
      cause: 'AgentFailed: kubelet on w1 did not come back',
    },
  });
  expect(counted()).toEqual(['ccm-migrate upgrade rolled-back']);
});

it('announces a succeeded run without touching the store', async () => {
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  const done = await store.finish('c1', 'up-1', { status: 'succeeded', summary: { nodes: 3 } });
  expect(await handler(ended('SUCCEEDED'), {} as never)).toEqual({ released: false });
  expect(await store.get('c1', 'up-1')).toEqual(done);
  expect(published()).toEqual({
    type: 'MigrationSucceeded',
    detail: {
      clusterId: 'c1',
      runId: 'up-1',
      kind: 'upgrade',
      executionArn: `${UPGRADE.replace(':stateMachine:', ':execution:')}:up-1-c1`,
    },
  });
  expect(counted()).toEqual(['ccm-migrate upgrade succeeded']);
});

it('cuts a long cause to what an event may carry, in the event and the record', async () => {
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  await handler(ended('FAILED', { error: 'Lambda.Unknown', cause: 'x'.repeat(5000) }), {} as never);
  expect((await store.get('c1', 'up-1'))?.error?.message).toHaveLength(1000);
  expect(published().detail.cause).toHaveLength(1000);
});

it('is safe to deliver twice: the second delivery releases nothing and announces again', async () => {
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  expect(await handler(ended('ABORTED'), {} as never)).toEqual({ released: true });
  bus.resetHistory();
  expect(await handler(ended('ABORTED'), {} as never)).toEqual({ released: false });
  expect(published().type).toBe('MigrationFailed');
});

it('throws when EventBridge refuses the event (so Lambda retries), after releasing the cluster', async () => {
  bus.on(PutEventsCommand).resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'InternalFailure' }] });
  await store.begin({ clusterId: 'c1', runId: 'up-1', kind: 'upgrade' });
  await expect(handler(ended('ABORTED'), {} as never)).rejects.toThrow(/InternalFailure/);
  expect(await store.current('c1')).toBeUndefined();
  expect(logs.map((l) => JSON.parse(l))).toEqual([
    expect.objectContaining({ level: 'ERROR', step: 'run-ended', errorName: 'Error' }),
  ]);
});

it('refuses an event that is not one of our executions ending, as InvalidInput', async () => {
  await expect(handler({ ...ended('FAILED'), source: 'aws.ec2' }, {} as never)).rejects.toMatchObject({
    name: 'InvalidInput',
  });
  const noIds = ended('FAILED');
  noIds.detail.input = JSON.stringify({ clusterId: 'c1' });
  await expect(handler(noIds, {} as never)).rejects.toMatchObject({ name: 'InvalidInput' });
  expect(bus.commandCalls(PutEventsCommand)).toHaveLength(0);
});
