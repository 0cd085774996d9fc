/**
 * A local run's history: what the run report draws its timeline from. One JSON line per moment, next to the
 * run's record (`<state-dir>/clusters/<id>/runs/<run-id>.history.jsonl`), appended by every execution of the
 * run (a resumed run adds its own). It keeps what Step Functions keeps of an execution on AWS (each state
 * entered, left, failed, retried, with its node), plus what only the local engine sees: the steps' progress
 * and the agent's file reports (paths, hashes and cloud flags; never a file's contents or its diff).
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import type { AgentResult } from '../agent/protocol.ts';
import { FileReportSchema } from '../agent/protocol.ts';
import { InvalidInputError } from '../errors.ts';
import { PHASES, type Progress } from '../steps/context.ts';
import { readText } from '../store/local-store.ts';
import type { EventLog } from './engine.ts';

const At = z.number().int().nonnegative();

export const StateEventSchema = z.enum(['entered', 'exited', 'failed', 'retried', 'caught']);

export const ErrorInfoSchema = z.object({ name: z.string(), cause: z.string() });

/** A file as the agent reported it: what the report may show. `diff` and `backup` stay out by construction. */
export const ReportedFileSchema = FileReportSchema.pick({
  path: true,
  exists: true,
  sha256: true,
  flags: true,
  changed: true,
});
export type ReportedFile = z.infer<typeof ReportedFileSchema>;

export const HistoryEntrySchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('run-started'),
    at: At,
    kind: z.string(),
    maxUnavailable: z.int().positive(),
  }),
  z.object({
    type: z.literal('run-ended'),
    at: At,
    status: z.enum(['SUCCEEDED', 'FAILED', 'ABORTED']),
    /** State transitions as Step Functions Standard bills them. */
    transitions: z.int().nonnegative(),
    /** Absent where nothing counted them (Step Functions on AWS). */
    apiRequests: z.int().nonnegative().optional(),
    error: ErrorInfoSchema.optional(),
  }),
  z.object({
    type: z.literal('state'),
    at: At,
    event: StateEventSchema,
    state: z.string(),
    /** Task, Map, Choice, Pass, Wait, Succeed, Fail. */
    stateType: z.string(),
    /** The node of a Map iteration's state (its input's `node`). */
    node: z.string().optional(),
    error: ErrorInfoSchema.optional(),
  }),
  z.object({
    type: z.literal('progress'),
    at: At,
    step: z.string(),
    node: z.string().optional(),
    message: z.string(),
    phase: z.enum(PHASES).optional(),
  }),
  z.object({
    type: z.literal('files'),
    at: At,
    node: z.string(),
    op: z.string(),
    files: z.array(ReportedFileSchema),
  }),
]);
export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;

const STATE_EVENTS: Readonly<Partial<Record<EventLog['type'], z.infer<typeof StateEventSchema>>>> = {
  StateEntered: 'entered',
  StateExited: 'exited',
  StateFailed: 'failed',
  StateRetried: 'retried',
  StateCaught: 'caught',
};

function errorOf(event: EventLog): z.infer<typeof ErrorInfoSchema> | undefined {
  if (!('Error' in event)) return undefined;
  const cause = event.Cause instanceof Error ? event.Cause.message : String(event.Cause ?? '');
  return { name: String(event.Error), cause };
}

/** The entry of an engine event: states only (the run's own start and end are entries of their own). */
export function stateEntryOf(event: EventLog): HistoryEntry | undefined {
  const what = STATE_EVENTS[event.type];
  if (!what || !('state' in event)) return undefined;
  const node = (event.state.input as { node?: unknown } | null)?.node;
  const error = errorOf(event);
  return {
    type: 'state',
    at: event.timestamp,
    event: what,
    state: event.state.name,
    stateType: event.state.type,
    ...(event.index !== undefined && typeof node === 'string' ? { node } : {}),
    ...(error ? { error } : {}),
  };
}

export function progressEntryOf(progress: Progress, at = Date.now()): HistoryEntry {
  return {
    type: 'progress',
    at,
    step: progress.step,
    message: progress.message,
    ...(progress.node ? { node: progress.node } : {}),
    ...(progress.phase ? { phase: progress.phase } : {}),
  };
}

export function filesEntryOf(node: string, result: AgentResult, at = Date.now()): HistoryEntry {
  // Parsing through the picked schema drops every other field (diff, backup) whatever the agent sent.
  return { type: 'files', at, node, op: result.op, files: z.array(ReportedFileSchema).parse(result.files) };
}

export interface HistoryWriter {
  record(entry: HistoryEntry): void;
  /** Flushes what was recorded. */
  close(): Promise<void>;
}

/** Appends to `file` (made with its directory, readable by its owner only). */
export async function openHistory(file: string): Promise<HistoryWriter> {
  let failure: Error | undefined;
  await mkdir(path.dirname(file), { recursive: true }).catch((err: Error) => {
    failure = err;
  });
  const stream = createWriteStream(file, { flags: 'a', mode: 0o600 });
  stream.on('error', (err) => {
    failure ??= err;
  });
  return {
    record: (entry) => {
      if (!failure) stream.write(`${JSON.stringify(entry)}\n`);
    },
    close: () =>
      new Promise((resolve) => {
        stream.end(() => {
          // A history that could not be written costs the report, never the run.
          if (failure) process.emitWarning(`run history ${file} not written: ${failure.message}`);
          resolve();
        });
      }),
  };
}

/** Every entry of a history file, in the order written; undefined when there is none. */
export async function readHistory(file: string): Promise<HistoryEntry[] | undefined> {
  const text = await readText(file);
  if (text === undefined) return undefined;
  const entries: HistoryEntry[] = [];
  const lines = text.split('\n');
  const last = lines.findLastIndex((l) => l.trim() !== '');
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      // The last line cut by a killed process: the lines before it still tell the story.
      if (i === last) break;
      throw new InvalidInputError(`${file}: line ${i + 1} is not JSON`);
    }
    const parsed = HistoryEntrySchema.safeParse(json);
    if (!parsed.success) throw new InvalidInputError(`${file}: line ${i + 1} is not a history entry`);
    entries.push(parsed.data);
  }
  return entries;
}
