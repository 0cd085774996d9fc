/** The run's snapshot, read back by the steps after preflight. */
import { InvalidInputError } from '../errors.ts';
import type { StepContext } from './context.ts';
import type { RunIds } from './schemas.ts';
import { type Snapshot, SnapshotSchema } from './snapshot.ts';

export async function loadSnapshot(ctx: StepContext, ids: RunIds): Promise<Snapshot> {
  const record = await ctx.store.get(ids.clusterId, ids.runId);
  if (record?.snapshot === undefined) {
    throw new InvalidInputError(
      `run ${ids.runId} of cluster ${ids.clusterId} has no snapshot: its preflight did not finish`,
    );
  }
  return SnapshotSchema.parse(record.snapshot);
}
