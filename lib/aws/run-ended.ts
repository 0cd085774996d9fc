/**
 * One of our executions ended. A run that failed, timed out or was aborted outside our Catch (a Lambda
 * timeout, StopExecution, the 12 h limit) still holds its cluster: release it by finishing its record as
 * failed, then say how the run ended on the bus. A run our Catch recorded already is left as it is.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { ERROR_NAMES } from '../errors.ts';
import { ExecutionStatusChange } from '../events.ts';
import { RunIds } from '../steps/schemas.ts';
import { parseInput, type RunKind } from '../store/run-record.ts';
import type { RunStore } from '../store/run-store.ts';
import { ENV, envVar } from './env.ts';
import { type Logger, lambdaLogger } from './logger.ts';
import { METRICS, type RunOutcome } from './metrics.ts';
import { eventsClient, publish } from './publish.ts';

export interface RunEndedDeps {
  readonly store: RunStore;
  readonly events?: EventBridgeClient;
  readonly env?: NodeJS.ProcessEnv;
  /** Where the RunsEnded metric goes (the function's log, as Embedded Metric Format). */
  readonly logger?: Logger;
}

/** Causes are our own errors' messages (never secrets), cut to what an event may carry. */
const short = (text: string | null | undefined) => (text ? text.slice(0, 1000) : undefined);

export async function onRunEnded(event: unknown, deps: RunEndedDeps): Promise<{ released: boolean }> {
  const env = deps.env ?? process.env;
  const events = deps.events ?? eventsClient();
  const { detail } = parseInput(ExecutionStatusChange, event, 'execution status change');
  const { clusterId, runId } = parseInput(RunIds, JSON.parse(detail.input ?? '{}'), 'execution input');
  const kind: RunKind =
    detail.stateMachineArn === env[ENV.downgradeStateMachineArn] ? 'downgrade' : 'upgrade';
  const bus = envVar(ENV.eventBusName, env);
  const ids = { clusterId, runId, kind, executionArn: detail.executionArn };
  const count = (outcome: RunOutcome) =>
    (deps.logger ?? lambdaLogger).count(METRICS.runsEnded, { Kind: kind, Outcome: outcome });

  if (detail.status === 'SUCCEEDED') {
    await publish(events, bus, { source: 'ccm-migrate', 'detail-type': 'MigrationSucceeded', detail: ids });
    count('succeeded');
    return { released: false };
  }
  let released = false;
  const record = await deps.store.get(clusterId, runId);
  if (record?.status === 'running') {
    await deps.store.finish(clusterId, runId, {
      status: 'failed',
      error: {
        name: detail.error || detail.status,
        message: short(detail.cause) ?? `execution ${detail.status}`,
      },
    });
    released = true;
  }
  if (detail.status === 'FAILED' && detail.error === ERROR_NAMES.rolledBack) {
    await publish(events, bus, {
      source: 'ccm-migrate',
      'detail-type': 'MigrationRolledBack',
      detail: { ...ids, ...(detail.cause ? { cause: short(detail.cause) } : {}) },
    });
    count('rolled-back');
  } else {
    await publish(events, bus, {
      source: 'ccm-migrate',
      'detail-type': 'MigrationFailed',
      detail: {
        ...ids,
        status: detail.status,
        ...(detail.error ? { error: detail.error } : {}),
        ...(detail.cause ? { cause: short(detail.cause) } : {}),
      },
    });
    count('failed');
  }
  return { released };
}
