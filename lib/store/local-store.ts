/**
 * Run records as files, for local mode:
 *
 *   <dir>/clusters/<clusterId>/runs/<runId>.json   one record per run
 *   <dir>/clusters/<clusterId>/runs/<runId>.history.jsonl   what the local engine saw of it (the run report's)
 *   <dir>/clusters/<clusterId>/current             the lock: {runId, kind, startedAt} of the run holding it
 *
 * Crash safety: a record is replaced atomically (temp file, fsync, rename), so a process killed at any
 * moment leaves the old record or the new one; temp files are dot files, which nothing here reads. The
 * lock is written whole to a temp file and then hard-linked into place: link(2) fails with EEXIST when
 * the lock exists, so of two processes racing exactly one wins, and nobody ever sees a half-written lock
 * (an `open(O_EXCL)` + write would show an empty one, and leave it forever if killed in between).
 * finish removes the lock before it marks the record finished: a kill in between leaves a record still
 * "running" but the cluster free (finish again, or begin with the same id, repairs it), never a lock
 * that nobody could safely remove.
 *
 * Within one process, steps run concurrently (a Map over nodes) and record at once: each record's
 * read-modify-write is serialised in-process, across every store instance on the same directory.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as z from 'zod';
import { writeAtomically } from '../agent/files.ts';
import { ClusterLockedError, InvalidInputError } from '../errors.ts';
import { claimDriver } from './local-driver.ts';
import { IdSchema, type Json, parseInput, type RunRecord, RunRecordSchema } from './run-record.ts';
import {
  type BeginRun,
  BeginRunSchema,
  byStart,
  type FinishRun,
  finished,
  lockedError,
  newRun,
  type RunHolder,
  type RunStore,
  resumed,
  updated,
  withSnapshotOnce,
  withStep,
} from './run-store.ts';

/** $CCM_MIGRATE_STATE_DIR, else ~/.ccm-migrate. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CCM_MIGRATE_STATE_DIR || path.join(os.homedir(), '.ccm-migrate');
}

const LockSchema = BeginRunSchema.pick({ runId: true, kind: true }).extend({ startedAt: z.iso.datetime() });

/** Per-file queues of read-modify-write work, shared by every store in the process. */
const queues = new Map<string, Promise<void>>();

async function serialised<T>(file: string, work: () => Promise<T>): Promise<T> {
  const result = (queues.get(file) ?? Promise.resolve()).then(work);
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  queues.set(file, settled);
  void settled.then(() => {
    if (queues.get(file) === settled) queues.delete(file);
  });
  return result;
}

function isCode(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException).code === code;
}

/** A file's text, or undefined when there is no such file. */
export async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
}

/** JSON of a state file; a file that is not is named by its path only. */
function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidInputError(`${file} is not JSON: remove it or restore it from a backup`);
  }
}

export interface LocalRunStoreOptions {
  /** The clock (tests). */
  readonly now?: () => Date;
}

export class LocalRunStore implements RunStore {
  readonly dir: string;
  readonly #now: () => Date;

  constructor(dir: string, opts: LocalRunStoreOptions = {}) {
    this.dir = path.resolve(dir);
    this.#now = opts.now ?? (() => new Date());
  }

  async begin(run: BeginRun): Promise<RunRecord> {
    const { clusterId, runId, kind } = parseInput(BeginRunSchema, run, 'run');
    await mkdir(this.#runsDir(clusterId), { recursive: true });
    const mine: RunHolder = { runId, kind, startedAt: this.#now().toISOString() };
    // The lock can vanish between a failed link and the read (its run finished): then try again.
    for (let attempt = 0; attempt < 10; attempt++) {
      if (await this.#tryLock(clusterId, mine)) {
        try {
          return await this.#createOrResume(clusterId, mine, kind);
        } catch (err) {
          await rm(this.#lockFile(clusterId), { force: true });
          throw err;
        }
      }
      const holder = await this.#holder(clusterId);
      if (!holder) continue;
      if (holder.runId !== runId) throw lockedError(clusterId, holder);
      return this.#createOrResume(clusterId, holder, kind);
    }
    throw new ClusterLockedError(`cluster ${clusterId}: its lock keeps changing hands; try again`);
  }

  claimDriver(clusterId: string): Promise<() => Promise<void>> {
    return claimDriver(this.#clusterDir(clusterId), clusterId);
  }

  async get(clusterId: string, runId: string): Promise<RunRecord | undefined> {
    return this.#read(this.#runFile(clusterId, runId));
  }

  async current(clusterId: string): Promise<RunRecord | undefined> {
    const holder = await this.#holder(clusterId);
    if (!holder) return undefined;
    // A begin killed between taking the lock and writing the record: the lock alone says it all.
    return (await this.get(clusterId, holder.runId)) ?? newRun({ clusterId, ...holder });
  }

  async update(clusterId: string, runId: string, change: (r: RunRecord) => RunRecord): Promise<RunRecord> {
    return this.#change(clusterId, runId, (r, now) => updated(r, change, now));
  }

  async recordStep(clusterId: string, runId: string, key: string, result: Json): Promise<void> {
    await this.#change(clusterId, runId, (r, now) => withStep(r, key, result, now));
  }

  async setSnapshotOnce(clusterId: string, runId: string, snapshot: Json): Promise<Json> {
    const record = await this.#change(clusterId, runId, (r, now) => withSnapshotOnce(r, snapshot, now));
    return record.snapshot as Json;
  }

  async finish(clusterId: string, runId: string, outcome: FinishRun): Promise<RunRecord> {
    return this.#change(clusterId, runId, async (r, now) => {
      const done = finished(r, outcome, now);
      // Serialised with every other change of this record, so no other finish of it can run between
      // the read and the removal (another process finishing the same run is out of scope).
      if ((await this.#holder(clusterId))?.runId === runId)
        await rm(this.#lockFile(clusterId), { force: true });
      return done;
    });
  }

  async list(clusterId: string): Promise<RunRecord[]> {
    const dir = this.#runsDir(clusterId);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (isCode(err, 'ENOENT')) return [];
      throw err;
    }
    // Record files only: temp files (dot files) may be left by a killed process.
    const files = names.filter((n) => !n.startsWith('.') && n.endsWith('.json'));
    const records = await Promise.all(files.map((n) => this.#read(path.join(dir, n))));
    return records.filter((r): r is RunRecord => r !== undefined).sort(byStart);
  }

  /** The run's history (lib/local/history.ts), beside its record. */
  historyFile(clusterId: string, runId: string): string {
    return this.#runFile(clusterId, runId).replace(/\.json$/, '.history.jsonl');
  }

  #clusterDir(clusterId: string): string {
    return path.join(this.dir, 'clusters', parseInput(IdSchema, clusterId, 'cluster id'));
  }

  #runsDir(clusterId: string): string {
    return path.join(this.#clusterDir(clusterId), 'runs');
  }

  #runFile(clusterId: string, runId: string): string {
    return path.join(this.#runsDir(clusterId), `${parseInput(IdSchema, runId, 'run id')}.json`);
  }

  #lockFile(clusterId: string): string {
    return path.join(this.#clusterDir(clusterId), 'current');
  }

  async #read(file: string): Promise<RunRecord | undefined> {
    const text = await readText(file);
    return text === undefined
      ? undefined
      : parseInput(RunRecordSchema, parseJson(text, file), `record ${file}`);
  }

  async #holder(clusterId: string): Promise<RunHolder | undefined> {
    const file = this.#lockFile(clusterId);
    const text = await readText(file);
    if (text === undefined) return undefined;
    let parsed: ReturnType<typeof LockSchema.safeParse> | undefined;
    try {
      parsed = LockSchema.safeParse(JSON.parse(text));
    } catch {
      // not JSON: handled below
    }
    if (!parsed?.success) {
      throw new ClusterLockedError(
        `cluster ${clusterId} is locked by ${file}, which is not a ccm-migrate lock: remove it if no run is active`,
      );
    }
    return parsed.data;
  }

  /** Take the cluster's lock for `holder`; false when it is held. */
  async #tryLock(clusterId: string, holder: RunHolder): Promise<boolean> {
    const file = this.#lockFile(clusterId);
    const temp = path.join(path.dirname(file), `.current.${randomBytes(6).toString('hex')}`);
    await writeFile(temp, JSON.stringify(holder), { flag: 'wx', mode: 0o600 });
    try {
      await link(temp, file);
      return true;
    } catch (err) {
      if (isCode(err, 'EEXIST')) return false;
      throw err;
    } finally {
      await rm(temp, { force: true });
    }
  }

  /** The record of the run holding the lock: created from the lock when missing, else resumed. */
  #createOrResume(clusterId: string, holder: RunHolder, kind: RunRecord['kind']): Promise<RunRecord> {
    const file = this.#runFile(clusterId, holder.runId);
    return serialised(file, async () => {
      const existing = await this.#read(file);
      if (existing) return resumed(existing, { clusterId, runId: holder.runId, kind });
      const record = resumed(newRun({ clusterId, ...holder }), { clusterId, runId: holder.runId, kind });
      await this.#write(file, record);
      return record;
    });
  }

  /** Read-modify-write of one record, serialised with every other change of it in this process. */
  #change(
    clusterId: string,
    runId: string,
    apply: (r: RunRecord, now: string) => RunRecord | Promise<RunRecord>,
  ): Promise<RunRecord> {
    const file = this.#runFile(clusterId, runId);
    return serialised(file, async () => {
      const record = await this.#read(file);
      if (!record) throw new InvalidInputError(`cluster ${clusterId} has no run ${runId}`);
      const next = await apply(record, this.#now().toISOString());
      if (next !== record) await this.#write(file, next);
      return next;
    });
  }

  #write(file: string, record: RunRecord): Promise<void> {
    return writeAtomically(this.dir, path.relative(this.dir, file), `${JSON.stringify(record, null, 2)}\n`);
  }
}
