/**
 * A Step Functions execution's history (GetExecutionHistory) as a run history (lib/local/history.ts), so
 * that the run report draws an execution on AWS as it draws a local run. Step Functions records each state
 * entered and left, each failed attempt and each retry, but none of the steps' progress lines: there are no
 * restart or taint phases to draw, and nothing counts API requests.
 */
import type { HistoryEvent } from '@aws-sdk/client-sfn';
import type { HistoryEntry } from '../local/history.ts';

const FAILURES: Readonly<
  Record<string, (e: HistoryEvent) => { error?: string; cause?: string } | undefined>
> = {
  TaskFailed: (e) => e.taskFailedEventDetails,
  TaskTimedOut: (e) => e.taskTimedOutEventDetails,
  LambdaFunctionFailed: (e) => e.lambdaFunctionFailedEventDetails,
  LambdaFunctionTimedOut: (e) => e.lambdaFunctionTimedOutEventDetails,
};

const SCHEDULED = new Set(['TaskScheduled', 'LambdaFunctionScheduled']);

const ENDED: Readonly<Record<string, 'SUCCEEDED' | 'FAILED' | 'ABORTED'>> = {
  ExecutionSucceeded: 'SUCCEEDED',
  ExecutionFailed: 'FAILED',
  ExecutionTimedOut: 'FAILED',
  ExecutionAborted: 'ABORTED',
};

function json(text: string | undefined): Record<string, unknown> {
  try {
    const value = JSON.parse(text ?? 'null') as unknown;
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The history's entries, from its events oldest first. Each event names the one before it in its own
 * thread (`previousEventId`): an exit, a failure or a retry belongs to the state entered up that chain, which
 * tells apart the iterations of a Map that run at once.
 */
export function historyFromExecution(kind: string, events: readonly HistoryEvent[]): HistoryEntry[] {
  const byId = new Map(events.map((e) => [e.id, e]));
  const enteredBefore = (e: HistoryEvent, name?: string): HistoryEvent | undefined => {
    for (let p = byId.get(e.previousEventId); p; p = byId.get(p.previousEventId)) {
      const entered = p.stateEnteredEventDetails;
      if (entered && (name === undefined || entered.name === name)) return p;
    }
    return undefined;
  };
  const stateOf = (entered: HistoryEvent) => {
    const node = json(entered.stateEnteredEventDetails?.input).node;
    return {
      type: 'state' as const,
      state: entered.stateEnteredEventDetails?.name ?? '',
      stateType: (entered.type ?? '').replace(/StateEntered$/, ''),
      ...(typeof node === 'string' ? { node } : {}),
    };
  };
  const entries: HistoryEntry[] = [];
  let transitions = 0;
  for (const e of events) {
    const at = e.timestamp?.getTime() ?? 0;
    const type = e.type ?? '';
    if (type === 'ExecutionStarted') {
      const input = json(e.executionStartedEventDetails?.input);
      const maxUnavailable = typeof input.maxUnavailable === 'number' ? input.maxUnavailable : 1;
      entries.push({ type: 'run-started', at, kind, maxUnavailable });
    } else if (e.stateEnteredEventDetails) {
      transitions += 1;
      entries.push({ ...stateOf(e), at, event: 'entered' });
    } else if (e.stateExitedEventDetails) {
      const entered = enteredBefore(e, e.stateExitedEventDetails.name);
      if (entered) entries.push({ ...stateOf(entered), at, event: 'exited' });
    } else if (FAILURES[type]) {
      const details = FAILURES[type](e);
      const entered = enteredBefore(e);
      const error = { name: details?.error ?? type, cause: details?.cause ?? '' };
      if (entered) entries.push({ ...stateOf(entered), at, event: 'failed', error });
    } else if (SCHEDULED.has(type) && FAILURES[byId.get(e.previousEventId)?.type ?? '']) {
      const entered = enteredBefore(e);
      transitions += 1;
      if (entered) entries.push({ ...stateOf(entered), at, event: 'retried' });
    } else if (ENDED[type]) {
      const failed = e.executionFailedEventDetails ?? e.executionTimedOutEventDetails;
      entries.push({
        type: 'run-ended',
        at,
        status: ENDED[type],
        transitions,
        ...(failed ? { error: { name: failed.error ?? type, cause: failed.cause ?? '' } } : {}),
      });
    }
  }
  return entries;
}
