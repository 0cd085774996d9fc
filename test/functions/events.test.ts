/** The rules' patterns against events built from the schemas: each matches its own events and no others. */
import { expect, it } from 'vitest';
import {
  type EventPattern,
  ExecutionStatusChange,
  executionEndedPattern,
  MIGRATION_REQUESTED_PATTERN,
  MigrationRequested,
  NOTIFY_PATTERN,
  OUTGOING_EVENTS,
} from '../../lib/events.ts';

/** EventBridge's matching for patterns of value lists: every field named in the pattern has a listed value. */
function matches(pattern: EventPattern, event: Record<string, unknown>): boolean {
  const detail = (event.detail ?? {}) as Record<string, unknown>;
  return (
    pattern.source.includes(event.source as string) &&
    pattern.detailType.includes(event['detail-type'] as string) &&
    Object.entries(pattern.detail ?? {}).every(([k, values]) => values.includes(detail[k] as string))
  );
}

const requested = MigrationRequested.parse({
  source: 'ccm-migrate',
  'detail-type': 'MigrationRequested',
  detail: { clusterId: 'prod-eu-1', kind: 'upgrade', requestId: 'req-1' },
});

it('matches MigrationRequested built from its schema, and not another kind, source or type', () => {
  expect(matches(MIGRATION_REQUESTED_PATTERN, requested)).toBe(true);
  expect(
    matches(MIGRATION_REQUESTED_PATTERN, { ...requested, detail: { ...requested.detail, kind: 'sideways' } }),
  ).toBe(false);
  expect(matches(MIGRATION_REQUESTED_PATTERN, { ...requested, source: 'someone-else' })).toBe(false);
  expect(matches(MIGRATION_REQUESTED_PATTERN, { ...requested, 'detail-type': 'MigrationStarted' })).toBe(
    false,
  );
});

it('matches the end of our executions only, for each ending status', () => {
  const arn = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
  const pattern = executionEndedPattern([arn]);
  for (const status of ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED'] as const) {
    const event = ExecutionStatusChange.parse({
      source: 'aws.states',
      'detail-type': 'Step Functions Execution Status Change',
      detail: { executionArn: `${arn}:x`, stateMachineArn: arn, status, input: '{}' },
    });
    expect(matches(pattern, event), status).toBe(true);
    expect(matches(pattern, { ...event, detail: { ...event.detail, stateMachineArn: `${arn}-other` } })).toBe(
      false,
    );
  }
  expect(
    matches(pattern, {
      source: 'aws.states',
      'detail-type': 'Step Functions Execution Status Change',
      detail: { stateMachineArn: arn, status: 'RUNNING' },
    }),
  ).toBe(false);
});

it('notifies on failed and rolled-back runs and drift, not on started or succeeded ones', () => {
  const ids = { clusterId: 'c', runId: 'up-1', kind: 'upgrade', executionArn: 'arn' };
  const built = {
    MigrationStarted: OUTGOING_EVENTS.MigrationStarted.parse({
      source: 'ccm-migrate',
      'detail-type': 'MigrationStarted',
      detail: { ...ids, requestId: 'r' },
    }),
    MigrationSucceeded: OUTGOING_EVENTS.MigrationSucceeded.parse({
      source: 'ccm-migrate',
      'detail-type': 'MigrationSucceeded',
      detail: ids,
    }),
    MigrationFailed: OUTGOING_EVENTS.MigrationFailed.parse({
      source: 'ccm-migrate',
      'detail-type': 'MigrationFailed',
      detail: { ...ids, status: 'FAILED' },
    }),
    MigrationRolledBack: OUTGOING_EVENTS.MigrationRolledBack.parse({
      source: 'ccm-migrate',
      'detail-type': 'MigrationRolledBack',
      detail: ids,
    }),
    DriftDetected: OUTGOING_EVENTS.DriftDetected.parse({
      source: 'ccm-migrate',
      'detail-type': 'DriftDetected',
      detail: { clusterId: 'c', findings: ['kubelet on worker-1 runs --cloud-provider=aws'] },
    }),
  };
  const notified = Object.entries(built)
    .filter(([, e]) => matches(NOTIFY_PATTERN, e))
    .map(([k]) => k);
  expect(notified).toEqual(['MigrationFailed', 'MigrationRolledBack', 'DriftDetected']);
});

it('refuses a MigrationRequested whose request id could not name an execution', () => {
  expect(
    MigrationRequested.safeParse({ ...requested, detail: { ...requested.detail, requestId: 'a b/c' } })
      .success,
  ).toBe(false);
});
