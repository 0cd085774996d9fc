/**
 * Run records in the DynamoDB table of table.ts, for AWS: the same RunStore as the file store, the same
 * transition rules (run-store.ts), written with single-item conditional writes.
 *
 * The lock (`LOCK`) names the run holding the cluster; it is taken by a conditional put that succeeds only
 * where there is none, so of any number of racing begins exactly one wins. A lock whose run has finished
 * holds nothing: finish marks the record finished (one conditional write, the moment the cluster is free)
 * and then deletes the lock if it still names the run; a crash in between leaves a stale lock, which the
 * next begin takes over by a conditional put naming the stale run, and which current() ignores. So no
 * crash leaves a finished run holding the cluster, without a TransactWriteItems (that dynalite, the
 * DynamoDB the tests run, does not implement, and that costs twice the write units).
 *
 * Every other change is optimistic: read the record and its version, apply the shared rule, put it back
 * on condition that the version did not move, and start again from a fresh read when it did, so that
 * parallel Lambdas recording their steps lose nothing.
 *
 * Size: an item holds at most 400 KB. The record is kept as gzip'd JSON (step results of thousands of
 * nodes compress well below that; a record that does not is refused with InvalidInputError). The
 * snapshot, written once and the largest part, lives in parts of its own beside the record: the parts
 * first, under an id of this write, then the record naming that id, on condition that it names none yet;
 * the loser of a race deletes its parts, and parts that no record names (a crash in between) are never
 * read.
 */
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { InvalidInputError, NotReadyYetError } from '../errors.ts';
import { type Json, JsonSchema, parseInput, type RunRecord, RunRecordSchema } from './run-record.ts';
import {
  type BeginRun,
  BeginRunSchema,
  byStart,
  type FinishRun,
  finished,
  lockedError,
  newRun,
  type RunHolder,
  RunHolderSchema,
  type RunStore,
  resumed,
  updated,
  withSnapshotOnce,
  withStep,
} from './run-store.ts';
import {
  lockKey,
  parseRunSk,
  runKey,
  runRange,
  runsOf,
  snapshotPartKey,
  type TableKey,
  tableError,
} from './table.ts';

const zip = promisify(gzip);
const unzip = promisify(gunzip);

/** Bytes of one binary attribute: an item's 400 KB less room for its keys and other attributes. */
export const MAX_PART_BYTES = 380_000;

/** Conflicting writes of one record before giving up (with a jittered backoff between). */
const MAX_ATTEMPTS = 60;

const RunItemSchema = z.object({
  version: z.int(),
  record: z.instanceof(Uint8Array),
  snapshot: z.object({ writeId: z.string(), parts: z.int() }).optional(),
});
type RunItem = z.infer<typeof RunItemSchema>;

const PartItemSchema = z.object({ sk: z.string(), data: z.instanceof(Uint8Array) });

interface Stored {
  readonly record: RunRecord;
  readonly item: RunItem;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Full jitter, growing to 200 ms: racing writers spread out instead of colliding again in step. */
const backoff = (attempt: number) => sleep(Math.random() * Math.min(200, 5 * 2 ** attempt));

function errorName(err: unknown): string | undefined {
  return err instanceof Error ? err.name : undefined;
}

export interface DynamoRunStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** The clock, as ISO timestamps (tests). */
  readonly now?: () => string;
}

export class DynamoRunStore implements RunStore {
  readonly tableName: string;
  readonly #doc: DynamoDBDocumentClient;
  readonly #now: () => string;

  constructor(opts: DynamoRunStoreOptions) {
    this.tableName = opts.tableName;
    this.#doc = DynamoDBDocumentClient.from(opts.client);
    this.#now = opts.now ?? (() => new Date().toISOString());
  }

  async begin(run: BeginRun): Promise<RunRecord> {
    const { clusterId, runId, kind } = parseInput(BeginRunSchema, run, 'run');
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const [lock, stored] = await Promise.all([this.#lock(clusterId), this.#load(clusterId, runId)]);
      if (lock && lock.runId !== runId && (await this.#holds(clusterId, lock))) {
        throw lockedError(clusterId, lock);
      }
      if (stored) resumed(stored.record, { clusterId, runId, kind });
      const mine: RunHolder =
        lock?.runId === runId ? lock : { runId, kind, startedAt: stored?.record.startedAt ?? this.#now() };
      // Taken where there is no lock, or over a stale one: its run finished.
      const taken =
        lock?.runId === runId ||
        (await this.#conditional(() =>
          this.#doc.send(
            new PutCommand({
              TableName: this.tableName,
              Item: { ...lockKey(clusterId), ...mine },
              ...(lock
                ? {
                    ConditionExpression: 'runId = :stale',
                    ExpressionAttributeValues: { ':stale': lock.runId },
                  }
                : { ConditionExpression: 'attribute_not_exists(pk)' }),
            }),
          ),
        ));
      if (taken) {
        if (stored) return stored.record;
        // No record yet: a new run, or one whose begin stopped after taking the lock.
        const record = resumed(newRun({ clusterId, ...mine }), { clusterId, runId, kind });
        if (await this.#create(clusterId, record)) return record;
      }
      await backoff(attempt);
    }
    throw new NotReadyYetError(`cluster ${clusterId}: its lock keeps changing hands; try again`);
  }

  async get(clusterId: string, runId: string): Promise<RunRecord | undefined> {
    return (await this.#load(clusterId, runId))?.record;
  }

  async current(clusterId: string): Promise<RunRecord | undefined> {
    const lock = await this.#lock(clusterId);
    if (!lock) return undefined;
    const stored = await this.#load(clusterId, lock.runId);
    if (!stored) return newRun({ clusterId, ...lock });
    return stored.record.status === 'running' ? stored.record : undefined;
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
    const record = await this.#change(clusterId, runId, (r, now) => finished(r, outcome, now));
    // The cluster is free from the write above on; this removes the stale lock (again, on a retry).
    await this.#conditional(() =>
      this.#doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: lockKey(clusterId),
          ConditionExpression: 'runId = :runId',
          ExpressionAttributeValues: { ':runId': runId },
        }),
      ),
    );
    return record;
  }

  async list(clusterId: string): Promise<RunRecord[]> {
    const { pk, prefix } = runsOf(clusterId);
    const items = await this.#query({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
    });
    const byRun = new Map<string, Record<string, unknown>[]>();
    for (const item of items) {
      const { runId } = parseRunSk(String(item.sk));
      byRun.set(runId, [...(byRun.get(runId) ?? []), item]);
    }
    const stored = await Promise.all(
      [...byRun].map(([runId, runItems]) => this.#decode(runKey(clusterId, runId), runItems)),
    );
    return stored.flatMap((s) => (s ? [s.record] : [])).sort(byStart);
  }

  /** The lock's holder, if the lock exists (its run may have finished since). */
  async #lock(clusterId: string): Promise<RunHolder | undefined> {
    const { Item } = await this.#send(() =>
      this.#doc.send(
        new GetCommand({ TableName: this.tableName, Key: lockKey(clusterId), ConsistentRead: true }),
      ),
    );
    if (!Item) return undefined;
    const { pk, sk, ...holder } = Item;
    return parseInput(RunHolderSchema, holder, `lock of cluster ${clusterId}`);
  }

  /** Whether the lock's run still holds the cluster: a lock without its record does (begin stopped). */
  async #holds(clusterId: string, lock: RunHolder): Promise<boolean> {
    const stored = await this.#load(clusterId, lock.runId);
    return !stored || stored.record.status === 'running';
  }

  async #load(clusterId: string, runId: string): Promise<Stored | undefined> {
    const { pk, from, to } = runRange(clusterId, runId);
    const items = await this.#query({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': from, ':to': to },
    });
    return this.#decode(runKey(clusterId, runId), items);
  }

  /** The record among `items` (a run's record and its snapshot parts), with its snapshot put together. */
  async #decode(key: TableKey, items: Record<string, unknown>[]): Promise<Stored | undefined> {
    const head = items.find((i) => i.sk === key.sk);
    if (!head) return undefined;
    const what = `record ${key.pk}/${key.sk} of table ${this.tableName}`;
    const item = parseInput(RunItemSchema, head, what);
    const record = parseInput(RunRecordSchema, await unzipJson(item.record, what), what);
    if (!item.snapshot) return { record, item };
    const { writeId, parts } = item.snapshot;
    // Parts of this write only: a lost race or a crash may have left others.
    const data = items
      .filter((i) => parseRunSk(String(i.sk)).snapshot?.writeId === writeId)
      .map((i) => parseInput(PartItemSchema, i, what))
      .sort((a, b) => (a.sk < b.sk ? -1 : 1))
      .map((p) => p.data);
    if (data.length !== parts) {
      throw new InvalidInputError(`${what}: its snapshot has ${data.length} of ${parts} parts`);
    }
    const snapshot = parseInput(
      JsonSchema,
      await unzipJson(Buffer.concat(data), what),
      `snapshot of ${what}`,
    );
    return { record: { ...record, snapshot }, item };
  }

  async #create(clusterId: string, record: RunRecord): Promise<boolean> {
    const body = await zipRecord(record);
    return this.#conditional(() =>
      this.#doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...runKey(clusterId, record.runId), version: 1, record: body },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  /** Optimistic read-modify-write of one record, from a fresh read after each conflict. */
  async #change(
    clusterId: string,
    runId: string,
    apply: (r: RunRecord, now: string) => RunRecord,
  ): Promise<RunRecord> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = await this.#load(clusterId, runId);
      if (!stored) throw new InvalidInputError(`cluster ${clusterId} has no run ${runId}`);
      const next = apply(stored.record, this.#now());
      if (next === stored.record) return next;
      if (await this.#save(clusterId, stored, next)) return next;
      await backoff(attempt);
    }
    throw new NotReadyYetError(
      `run ${runId} of cluster ${clusterId} changed under ${MAX_ATTEMPTS} writes of others in a row; try again`,
    );
  }

  /** `next` in place of `stored`, unless the record changed since it was read (then false). */
  async #save(clusterId: string, stored: Stored, next: RunRecord): Promise<boolean> {
    const { snapshot, ...rest } = next;
    const key = runKey(clusterId, next.runId);
    const body = await zipRecord(rest);
    // The rules let a snapshot be added, never changed: parts are written only by its first write.
    const parts =
      snapshot !== undefined && stored.record.snapshot === undefined
        ? await this.#writeSnapshot(clusterId, next.runId, snapshot)
        : undefined;
    const snapshotRef = parts?.ref ?? stored.item.snapshot;
    const saved = await this.#conditional(() =>
      this.#doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...key,
            version: stored.item.version + 1,
            record: body,
            ...(snapshotRef ? { snapshot: snapshotRef } : {}),
          },
          // Names, not words: `snapshot` is one of DynamoDB's reserved words.
          ConditionExpression: parts ? '#version = :v AND attribute_not_exists(#snapshot)' : '#version = :v',
          ExpressionAttributeNames: { '#version': 'version', ...(parts ? { '#snapshot': 'snapshot' } : {}) },
          ExpressionAttributeValues: { ':v': stored.item.version },
        }),
      ),
    );
    if (!saved && parts) {
      await Promise.all(
        parts.keys.map((k) =>
          this.#send(() => this.#doc.send(new DeleteCommand({ TableName: this.tableName, Key: k }))),
        ),
      );
    }
    return saved;
  }

  async #writeSnapshot(clusterId: string, runId: string, snapshot: Json) {
    const data = await zip(JSON.stringify(snapshot));
    const writeId = randomBytes(6).toString('hex');
    const count = Math.max(1, Math.ceil(data.length / MAX_PART_BYTES));
    const keys = Array.from({ length: count }, (_, i) => snapshotPartKey(clusterId, runId, writeId, i));
    await Promise.all(
      keys.map((k, i) =>
        this.#send(() =>
          this.#doc.send(
            new PutCommand({
              TableName: this.tableName,
              Item: { ...k, data: data.subarray(i * MAX_PART_BYTES, (i + 1) * MAX_PART_BYTES) },
            }),
          ),
        ),
      ),
    );
    return { ref: { writeId, parts: count }, keys };
  }

  async #query(input: Omit<QueryCommandInput, 'TableName'>): Promise<Record<string, unknown>[]> {
    return this.#send(async () => {
      const items: Record<string, unknown>[] = [];
      const pages = paginateQuery(
        { client: this.#doc },
        { ...input, TableName: this.tableName, ConsistentRead: true },
      );
      for await (const page of pages) items.push(...(page.Items ?? []));
      return items;
    });
  }

  /** Whether a conditional write happened (false: its condition did not hold). */
  async #conditional(write: () => Promise<unknown>): Promise<boolean> {
    try {
      await this.#send(write);
      return true;
    } catch (err) {
      if (errorName(err) === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }

  async #send<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw tableError(err, this.tableName);
    }
  }
}

/** The record without its snapshot, as stored: refused when even compressed it cannot fit an item. */
async function zipRecord(record: Omit<RunRecord, 'snapshot'>): Promise<Uint8Array> {
  const body = await zip(JSON.stringify(record));
  if (body.length > MAX_PART_BYTES) {
    throw new InvalidInputError(
      `run ${record.runId} of cluster ${record.clusterId} would take ${Math.ceil(body.length / 1000)} KB ` +
        `compressed, over the ${MAX_PART_BYTES / 1000} KB a DynamoDB item holds: step results must be summaries`,
    );
  }
  return body;
}

/** JSON of gzip'd bytes; bytes that are not are named by `what` only, never shown. */
async function unzipJson(bytes: Uint8Array, what: string): Promise<unknown> {
  try {
    return JSON.parse((await unzip(bytes)).toString('utf8'));
  } catch {
    throw new InvalidInputError(`${what} is not gzip'd JSON: restore it from a point-in-time backup`);
  }
}
