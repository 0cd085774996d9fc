/**
 * MigrationRequested carries image overrides in its options: the starter passes them into the execution
 * input; an override that does not parse, or names an unknown container, starts nothing.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, expect, it } from 'vitest';
import { ENV } from '../../lib/aws/env.ts';
import { startRequestedRun } from '../../lib/aws/starter.ts';

const sfn = mockClient(SFNClient);
const events = mockClient(EventBridgeClient);
const MIRROR = 'mirror.example.internal/provider-aws/cloud-controller-manager:v1.26.6';
const env = {
  [ENV.upgradeStateMachineArn]: 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade',
  [ENV.eventBusName]: 'ccm-migrate-bus',
};

beforeEach(() => {
  sfn.reset().on(StartExecutionCommand).resolves({ executionArn: 'arn:x', startDate: new Date() });
  events
    .reset()
    .on(PutEventsCommand)
    .resolves({ FailedEntryCount: 0, Entries: [{ EventId: '1' }] });
});

/** The starter's answer to an upgrade request whose options carry `images`. */
const start = (images: object) =>
  startRequestedRun(
    {
      source: 'ccm-migrate',
      'detail-type': 'MigrationRequested',
      detail: { clusterId: 'prod-eu-1', kind: 'upgrade', requestId: 'req-9', options: { images } },
    },
    { sfn: new SFNClient({}), events: new EventBridgeClient({}), env },
  );

it('passes the overrides into the execution input', async () => {
  await start({ 'cloud-controller-manager': MIRROR });
  const input = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input;
  expect(JSON.parse(input ?? '{}').options).toEqual({ images: { 'cloud-controller-manager': MIRROR } });
});

it.each([
  [
    'an unknown container',
    { ccm: MIRROR },
    /options\.images\.ccm: not a container ccm-migrate sets the image of/,
  ],
  [
    'an image that does not parse',
    { 'cloud-controller-manager': 'Mirror/ccm v1' },
    /options\.images\.cloud-controller-manager: "Mirror\/ccm v1" is not an image reference/,
  ],
])('starts nothing for %s', async (_what, images, message) => {
  await expect(start(images)).rejects.toMatchObject({
    name: 'InvalidInput',
    message: expect.stringMatching(message),
  });
  expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
});
