/** Steps 7 and the Catch: record how the run ended, which releases the cluster for the next run. */
import type { StepContext } from './context.ts';
import type { RunIds, Verification } from './schemas.ts';

export interface RunOutcome {
  readonly status: 'succeeded' | 'failed' | 'rolled-back';
  readonly clusterId: string;
  readonly runId: string;
}

export async function finalize(
  event: RunIds & { verification: Verification },
  ctx: StepContext,
): Promise<RunOutcome & { verification: Verification }> {
  await ctx.store.finish(event.clusterId, event.runId, { status: 'succeeded', summary: event.verification });
  ctx.progress({ step: 'finalize', message: `run ${event.runId} succeeded` });
  return {
    status: 'succeeded',
    clusterId: event.clusterId,
    runId: event.runId,
    verification: event.verification,
  };
}

type FailureEvent = RunIds & { error: { Error: string; Cause?: string | undefined } };

/** Finish the run with the error a Catch caught (its Cause, or its name when it has none). */
async function finishWithError(
  event: FailureEvent,
  ctx: StepContext,
  status: 'failed' | 'rolled-back',
  step: string,
  says: string,
): Promise<RunOutcome> {
  const message = event.error.Cause ?? event.error.Error;
  // A run refused at its start (ClusterLocked: another run holds the cluster) has no record to finish.
  if ((await ctx.store.get(event.clusterId, event.runId)) === undefined) {
    ctx.progress({ step, message: `run ${event.runId} never began: ${event.error.Error}: ${message}` });
    return { status, clusterId: event.clusterId, runId: event.runId };
  }
  await ctx.store.finish(event.clusterId, event.runId, {
    status,
    error: { name: event.error.Error, message },
  });
  ctx.progress({ step, message: `run ${event.runId} ${says} ${event.error.Error}: ${message}` });
  return { status, clusterId: event.clusterId, runId: event.runId };
}

export function recordFailure(event: FailureEvent, ctx: StepContext): Promise<RunOutcome> {
  return finishWithError(event, ctx, 'failed', 'record-failure', 'failed:');
}

/** The end of a rollback: the run failed, and the cluster is back where it started. */
export function recordRollback(event: FailureEvent, ctx: StepContext): Promise<RunOutcome> {
  return finishWithError(event, ctx, 'rolled-back', 'record-rollback', 'rolled back after');
}
