/**
 * Where runs are recorded, one run per cluster at a time. `LocalRunStore` keeps files; a DynamoDB store
 * follows with the same interface. The transitions below are pure so that every implementation applies
 * the same rules (resume, lock, first snapshot wins, finished runs no longer change) and differs only in
 * how it writes.
 */
import { isDeepStrictEqual } from 'node:util';
import * as z from 'zod';
import { ClusterLockedError, InvalidInputError } from '../errors.ts';
import {
  IdSchema,
  type Json,
  JsonSchema,
  parseInput,
  type RecordKind,
  RecordKindSchema,
  RunErrorSchema,
  type RunRecord,
  RunRecordSchema,
} from './run-record.ts';

export const BeginRunSchema = z.object({ clusterId: IdSchema, runId: IdSchema, kind: RecordKindSchema });
export type BeginRun = z.infer<typeof BeginRunSchema>;

export const FinishRunSchema = z.object({
  status: z.enum(['succeeded', 'failed', 'rolled-back']),
  summary: JsonSchema.optional(),
  error: RunErrorSchema.optional(),
});
export type FinishRun = z.infer<typeof FinishRunSchema>;

export interface RunStore {
  /**
   * Start a run, or resume it: the cluster's unfinished run with this runId is returned as it is; another
   * unfinished run of the cluster is ClusterLockedError (naming it and when it started). A runId that
   * already finished is InvalidInputError: a new run needs a new id.
   */
  begin(run: BeginRun): Promise<RunRecord>;
  get(clusterId: string, runId: string): Promise<RunRecord | undefined>;
  /** The run holding the cluster, if any. */
  current(clusterId: string): Promise<RunRecord | undefined>;
  /**
   * Read-modify-write of an unfinished run. `change` may not touch the ids, kind, status or times (finish
   * does); its result must still be a valid record.
   */
  update(clusterId: string, runId: string, change: (r: RunRecord) => RunRecord): Promise<RunRecord>;
  /** Set the latest result of one step (a step re-run after a retry overwrites its entry). */
  recordStep(clusterId: string, runId: string, key: string, result: Json): Promise<void>;
  /** Store the snapshot unless one is there; returns the stored one (the first write wins). */
  setSnapshotOnce(clusterId: string, runId: string, snapshot: Json): Promise<Json>;
  /**
   * End the run and release the cluster. Finishing again with the same status returns the record as it is
   * (a retried call); with another status it is InvalidInputError.
   */
  finish(clusterId: string, runId: string, outcome: FinishRun): Promise<RunRecord>;
  /** Every run of the cluster, oldest first. */
  list(clusterId: string): Promise<RunRecord[]>;
  /**
   * Local mode: claim the cluster for this process before starting or resuming its run, so that a second
   * process refuses (ClusterLocked) instead of resuming a run that is still being driven; the result
   * releases the claim. Absent where an engine names executions (Step Functions refuses a second one).
   */
  claimDriver?(clusterId: string): Promise<() => Promise<void>>;
}

/** What a store knows of the run holding a cluster (what its lock says). */
export const RunHolderSchema = BeginRunSchema.pick({ runId: true, kind: true }).extend({
  startedAt: z.iso.datetime(),
});
export type RunHolder = Readonly<z.infer<typeof RunHolderSchema>>;

export function newRun(holder: RunHolder & { readonly clusterId: string }): RunRecord {
  return {
    clusterId: holder.clusterId,
    runId: holder.runId,
    kind: holder.kind,
    status: 'running',
    startedAt: holder.startedAt,
    updatedAt: holder.startedAt,
    steps: {},
  };
}

export function lockedError(clusterId: string, holder: RunHolder): ClusterLockedError {
  return new ClusterLockedError(
    `cluster ${clusterId} is held by ${holder.kind} run ${holder.runId}, started ${holder.startedAt}: ` +
      `wait for it to finish, or resume it with run id ${holder.runId}`,
  );
}

function refuseFinished(record: RunRecord): void {
  if (record.status !== 'running') {
    throw new InvalidInputError(
      `run ${record.runId} of cluster ${record.clusterId} finished (${record.status}) at ${record.finishedAt}: ` +
        'its record no longer changes, and a new run needs a new run id',
    );
  }
}

const described = (kind: RecordKind) =>
  ({ upgrade: 'an upgrade', downgrade: 'a downgrade', remediate: 'a remediation' })[kind];

/** The record begin returns for a run that exists already. */
export function resumed(record: RunRecord, run: BeginRun): RunRecord {
  refuseFinished(record);
  if (record.kind !== run.kind) {
    throw new InvalidInputError(
      `run ${record.runId} of cluster ${record.clusterId} is ${described(record.kind)}, not ${described(run.kind)}`,
    );
  }
  return record;
}

const FIXED_FIELDS = ['clusterId', 'runId', 'kind', 'status', 'startedAt', 'finishedAt'] as const;

/** `change` applied to an unfinished record, checked, and stamped with `now`. */
export function updated(record: RunRecord, change: (r: RunRecord) => RunRecord, now: string): RunRecord {
  refuseFinished(record);
  const next = parseInput(RunRecordSchema, change(structuredClone(record)), `update of run ${record.runId}`);
  const touched = FIXED_FIELDS.filter((f) => next[f] !== record[f]);
  if (touched.length > 0) {
    throw new InvalidInputError(`update of run ${record.runId} may not change ${touched.join(', ')}`);
  }
  // The way back is written once (setSnapshotOnce): a store may keep it apart from the record.
  if (record.snapshot !== undefined && !isDeepStrictEqual(next.snapshot, record.snapshot)) {
    throw new InvalidInputError(`update of run ${record.runId} may not change its snapshot, written once`);
  }
  return { ...next, updatedAt: now };
}

export function withStep(record: RunRecord, key: string, result: Json, now: string): RunRecord {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidInputError('a step key is required');
  // The result is checked here, not only as part of the record, so that the error names the step.
  const value = parseInput(JsonSchema, result, `result of step ${key}`);
  return updated(record, (r) => ({ ...r, steps: { ...r.steps, [key]: { at: now, result: value } } }), now);
}

/** The record with `snapshot` stored, or the record unchanged when it has one already. */
export function withSnapshotOnce(record: RunRecord, snapshot: Json, now: string): RunRecord {
  refuseFinished(record);
  const value = parseInput(JsonSchema, snapshot, `snapshot of run ${record.runId}`);
  if (record.snapshot !== undefined) return record;
  return updated(record, (r) => ({ ...r, snapshot: value }), now);
}

/** The finished record; the record itself when it already finished with the same status. */
export function finished(record: RunRecord, outcome: FinishRun, now: string): RunRecord {
  const { status, summary, error } = parseInput(FinishRunSchema, outcome, `outcome of run ${record.runId}`);
  if (record.status === status) return record;
  refuseFinished(record);
  return parseInput(
    RunRecordSchema,
    {
      ...record,
      status,
      updatedAt: now,
      finishedAt: now,
      ...(summary !== undefined ? { summary } : {}),
      ...(error !== undefined ? { error } : {}),
    },
    `finished record of run ${record.runId}`,
  );
}

/** list order: by start, then by id (runs started in the same millisecond). */
export function byStart(a: RunRecord, b: RunRecord): number {
  // ISO timestamps of one format order as strings.
  if (a.startedAt !== b.startedAt) return a.startedAt < b.startedAt ? -1 : 1;
  return a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0;
}
