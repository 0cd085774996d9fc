/** The run's snapshot, read back by the steps after preflight. */
import { InvalidInputError } from '../errors.ts';
import type { RunStore } from '../store/run-store.ts';
import type { StepContext } from './context.ts';
import type { RunIds } from './schemas.ts';
import { type Snapshot, SnapshotSchema } from './snapshot.ts';

/**
 * Snapshots already read, per store, by `<cluster>/<run>`: a snapshot is written once (RunStore refuses to
 * change it), so every step of a run in this process (the local engine, a warm Lambda) can share one parse
 * instead of reading and parsing the whole record again: at 500 nodes that was most of the
 * orchestrator's CPU (issue 17). Only the latest few are kept.
 */
const parsed = new WeakMap<RunStore, Map<string, Snapshot>>();
const KEPT = 8;

export async function loadSnapshot(ctx: StepContext, ids: RunIds): Promise<Snapshot> {
  const known = parsed.get(ctx.store) ?? new Map<string, Snapshot>();
  parsed.set(ctx.store, known);
  const key = `${ids.clusterId}/${ids.runId}`;
  const cached = known.get(key);
  if (cached) return cached;
  const record = await ctx.store.get(ids.clusterId, ids.runId);
  if (record?.snapshot === undefined) {
    throw new InvalidInputError(
      `run ${ids.runId} of cluster ${ids.clusterId} has no snapshot: its preflight did not finish`,
    );
  }
  const snapshot = SnapshotSchema.parse(record.snapshot);
  known.set(key, snapshot);
  for (const old of [...known.keys()].slice(0, Math.max(0, known.size - KEPT))) known.delete(old);
  return snapshot;
}
