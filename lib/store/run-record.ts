/**
 * A run record: one upgrade, downgrade or remediation of one cluster, as the store keeps it (a JSON file in local mode,
 * a DynamoDB item in AWS). Small by design: step results and the snapshot are the JSON summaries steps
 * return, never file contents or credentials.
 */
import * as z from 'zod';
import { InvalidInputError } from '../errors.ts';

/**
 * Cluster and run ids name files and DynamoDB keys: a DNS label (lower-case letters, digits and inner
 * dashes, at most 63 characters) is safe in both, and no id can climb out of the state directory.
 */
export const IdSchema = z
  .string()
  .max(63, 'at most 63 characters')
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'lower-case letters, digits and inner dashes (a DNS label)');

export const JsonSchema = z.json();
export type Json = z.infer<typeof JsonSchema>;

/** A migration: what a MigrationRequested asks for and a state machine runs. */
export const RunKindSchema = z.enum(['upgrade', 'downgrade']);
export type RunKind = z.infer<typeof RunKindSchema>;

/**
 * What a record is a run of: a migration, or a drift remediation (kubelets that came back in-tree flipped
 * again, lib/drift/remediate.ts), which holds the cluster as a migration does.
 */
export const RecordKindSchema = z.enum([...RunKindSchema.options, 'remediate']);
export type RecordKind = z.infer<typeof RecordKindSchema>;

/** rolled-back: the run failed and undid what it had changed; its error is kept. */
export const RunStatusSchema = z.enum(['running', 'succeeded', 'failed', 'rolled-back']);
export type RunStatus = z.infer<typeof RunStatusSchema>;

const Timestamp = z.iso.datetime();

export const StepEntrySchema = z.object({ at: Timestamp, result: JsonSchema });
export type StepEntry = z.infer<typeof StepEntrySchema>;

export const RunErrorSchema = z.object({ name: z.string(), message: z.string() });
export type RunError = z.infer<typeof RunErrorSchema>;

export const RunRecordSchema = z.object({
  clusterId: IdSchema,
  runId: IdSchema,
  kind: RecordKindSchema,
  status: RunStatusSchema,
  startedAt: Timestamp,
  updatedAt: Timestamp,
  finishedAt: Timestamp.optional(),
  /** What the run changes, as it was before (the way back). Written once: the first write wins. */
  snapshot: JsonSchema.optional(),
  /** Each step's latest result, by the step's key (e.g. `kubelet/worker-1`). */
  steps: z.record(z.string().min(1), StepEntrySchema),
  error: RunErrorSchema.optional(),
  summary: JsonSchema.optional(),
});
export type RunRecord = z.infer<typeof RunRecordSchema>;

/** `value` parsed by `schema`, or InvalidInputError naming each problem by its path (never the value). */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const why = parsed.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ` : '') + i.message);
  throw new InvalidInputError(`invalid ${what}: ${why.join('; ')}`);
}
