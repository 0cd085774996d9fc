/**
 * The starter under a stack that requires approval (`REQUIRE_APPROVAL=true`, the construct's
 * `requireApproval`; `REQUIRE_DOWNGRADE_APPROVAL=true`, its `requireDowngradeApproval`): every run of that
 * kind it starts asks for approval whatever the event says; the other kind is started as asked; without the
 * setting the event decides.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { handler } from '../../functions/starter.ts';

const sfn = mockClient(SFNClient);
const events = mockClient(EventBridgeClient);

beforeEach(() => {
  sfn.reset();
  events.reset();
  events.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: '1' }] });
  sfn.on(StartExecutionCommand).resolves({ executionArn: 'arn:x', startDate: new Date() });
  process.env.UPGRADE_STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
  process.env.DOWNGRADE_STATE_MACHINE_ARN = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Downgrade';
  process.env.EVENT_BUS_NAME = 'ccm-migrate-bus';
});
afterEach(() => {
  delete process.env.REQUIRE_APPROVAL;
  delete process.env.REQUIRE_DOWNGRADE_APPROVAL;
});

/** The options of the execution the starter starts for a request of `kind` with `options`. */
async function startedOptions(kind: string, options?: object): Promise<unknown> {
  sfn.resetHistory();
  const detail = { clusterId: 'prod-eu-1', kind, requestId: 'req-7', ...(options ? { options } : {}) };
  await handler({ source: 'ccm-migrate', 'detail-type': 'MigrationRequested', detail }, {} as never);
  const input = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input;
  return (JSON.parse(input ?? '{}') as { options?: unknown }).options;
}

it('makes every upgrade wait for approval when the stack requires it, even one whose event says no', async () => {
  process.env.REQUIRE_APPROVAL = 'true';
  expect(await startedOptions('upgrade')).toEqual({ requireApproval: true });
  expect(await startedOptions('upgrade', { requireApproval: false, provider: 'aws' })).toEqual({
    requireApproval: true,
    provider: 'aws',
  });
  expect(await startedOptions('downgrade')).toEqual({});
});

it('starts upgrades as the event asks when the stack does not require approval', async () => {
  expect(await startedOptions('upgrade')).toEqual({});
  expect(await startedOptions('upgrade', { requireApproval: true })).toEqual({ requireApproval: true });
  process.env.REQUIRE_APPROVAL = 'false';
  expect(await startedOptions('upgrade')).toEqual({});
});

it('makes every downgrade wait for approval when the stack requires it of downgrades, and only downgrades', async () => {
  process.env.REQUIRE_DOWNGRADE_APPROVAL = 'true';
  expect(await startedOptions('downgrade')).toEqual({ requireApproval: true });
  expect(await startedOptions('downgrade', { requireApproval: false })).toEqual({ requireApproval: true });
  expect(await startedOptions('upgrade')).toEqual({});
});

it('starts downgrades as the event asks when the stack does not require approval of them', async () => {
  expect(await startedOptions('downgrade', { requireApproval: true })).toEqual({ requireApproval: true });
  expect(await startedOptions('downgrade')).toEqual({});
});
