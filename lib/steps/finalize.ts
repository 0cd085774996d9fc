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

export async function recordFailure(
  event: RunIds & { error: { Error: string; Cause?: string | undefined } },
  ctx: StepContext,
): Promise<RunOutcome> {
  const message = event.error.Cause ?? event.error.Error;
  await ctx.store.finish(event.clusterId, event.runId, {
    status: 'failed',
    error: { name: event.error.Error, message },
  });
  ctx.progress({
    step: 'record-failure',
    message: `run ${event.runId} failed: ${event.error.Error}: ${message}`,
  });
  return { status: 'failed', clusterId: event.clusterId, runId: event.runId };
}

/** The end of a rollback: the run failed, and the cluster is back where it started. */
export async function recordRollback(
  event: RunIds & { error: { Error: string; Cause?: string | undefined } },
  ctx: StepContext,
): Promise<RunOutcome> {
  const message = event.error.Cause ?? event.error.Error;
  await ctx.store.finish(event.clusterId, event.runId, {
    status: 'rolled-back',
    error: { name: event.error.Error, message },
  });
  ctx.progress({
    step: 'record-rollback',
    message: `run ${event.runId} rolled back after ${event.error.Error}: ${message}`,
  });
  return { status: 'rolled-back', clusterId: event.clusterId, runId: event.runId };
}
