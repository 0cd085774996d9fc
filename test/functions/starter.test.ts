/** The starter: one execution per request, named after it; a repeated request starts nothing new. */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { ExecutionAlreadyExists, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, expect, it } from 'vitest';
import { handler } from '../../functions/starter.ts';
import { executionNameFor, runIdFor } from '../../lib/aws/starter.ts';

const sfn = mockClient(SFNClient);
const events = mockClient(EventBridgeClient);
const UPGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
const DOWNGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Downgrade';

beforeEach(() => {
  sfn.reset();
  events.reset();
  events.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: '1' }] });
  process.env.UPGRADE_STATE_MACHINE_ARN = UPGRADE;
  process.env.DOWNGRADE_STATE_MACHINE_ARN = DOWNGRADE;
  process.env.EVENT_BUS_NAME = 'ccm-migrate-bus';
});

const request = (kind: string, requestId = 'req-42') => ({
  version: '0',
  id: 'evt-1',
  source: 'ccm-migrate',
  'detail-type': 'MigrationRequested',
  detail: { clusterId: 'prod-eu-1', kind, requestId, maxUnavailable: 2 },
});

it("starts the kind's machine with a name and run id made from the cluster and request, and ids-only input", async () => {
  sfn.on(StartExecutionCommand).resolves({ executionArn: `${UPGRADE}:x`, startDate: new Date() });
  const out = await handler(request('upgrade'), {} as never);
  const runId = runIdFor({ clusterId: 'prod-eu-1', kind: 'upgrade', requestId: 'req-42' });
  expect(runId).toMatch(/^up-[0-9a-f]{16}$/);
  const calls = sfn.commandCalls(StartExecutionCommand);
  expect(calls).toHaveLength(1);
  expect(calls[0]?.args[0].input).toEqual({
    stateMachineArn: UPGRADE,
    name: `${runId}-prod-eu-1`,
    input: JSON.stringify({ clusterId: 'prod-eu-1', runId, maxUnavailable: 2, options: {} }),
  });
  expect(out).toEqual({ executionArn: `${UPGRADE}:x`, runId, started: true });
  const put = events.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries?.[0];
  expect(put).toMatchObject({
    EventBusName: 'ccm-migrate-bus',
    Source: 'ccm-migrate',
    DetailType: 'MigrationStarted',
  });
  expect(JSON.parse(put?.Detail ?? '{}')).toMatchObject({ clusterId: 'prod-eu-1', runId, kind: 'upgrade' });
});

it('treats ExecutionAlreadyExists as done: same name, nothing published, no error', async () => {
  sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
  const out = (await handler(request('downgrade'), {} as never)) as {
    started: boolean;
    executionArn: string;
  };
  const runId = runIdFor({ clusterId: 'prod-eu-1', kind: 'downgrade', requestId: 'req-42' });
  expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.stateMachineArn).toBe(DOWNGRADE);
  expect(out).toEqual({
    started: false,
    runId,
    executionArn: `arn:aws:states:eu-west-1:111111111111:execution:Downgrade:${runId}-prod-eu-1`,
  });
  expect(events.commandCalls(PutEventsCommand)).toHaveLength(0);
});

it('passes other failures on with their name, and refuses a malformed request as InvalidInput', async () => {
  sfn
    .on(StartExecutionCommand)
    .rejects(Object.assign(new Error('slow down'), { name: 'ThrottlingException' }));
  await expect(handler(request('upgrade'), {} as never)).rejects.toMatchObject({
    name: 'ThrottlingException',
  });
  await expect(handler(request('sideways'), {} as never)).rejects.toMatchObject({ name: 'InvalidInput' });
});

it('keeps execution names within 80 characters for the longest cluster ids, and distinct per request', () => {
  const cluster = 'c'.repeat(63);
  const a = executionNameFor(cluster, runIdFor({ clusterId: cluster, kind: 'downgrade', requestId: 'a' }));
  const b = executionNameFor(cluster, runIdFor({ clusterId: cluster, kind: 'downgrade', requestId: 'b' }));
  expect(a.length).toBeLessThanOrEqual(80);
  expect(a).not.toBe(b);
});
