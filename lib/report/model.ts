/**
 * What a run report shows, as data: the timeline's lanes and spans (milliseconds from the run's start), the
 * summary, and each node's files as hashes and cloud flags. The HTML (html.ts) only draws it.
 */
import * as z from 'zod';
import { RunErrorSchema, RunStatusSchema } from '../store/run-record.ts';

export const SpanKindSchema = z.enum([
  /** A state of the workflow: a step, or a Map over nodes. */
  'step',
  /** The node's kubelet restarting on its new flags until the node is Ready. */
  'kubelet-restart',
  /** kube-apiserver and kube-controller-manager restarting on their new manifests until Ready. */
  'static-pods-restart',
  /** The node tainted uninitialized until the CCM initialised it. */
  'uninitialized-taint',
  /** A pause: a step's retry after a retryable error, the approval gate. */
  'wait',
  /** A step that failed (caught, or the run's end). */
  'failed',
  /** Who ran the cloud loops. */
  'holder',
  /** An interval the twin's invariant monitor recorded. */
  'invariant',
]);
export type SpanKind = z.infer<typeof SpanKindSchema>;

export const SpanSchema = z.object({
  kind: SpanKindSchema,
  label: z.string(),
  startMs: z.number(),
  endMs: z.number(),
  /** More about it, for the tooltip and the table. */
  detail: z.string().optional(),
  /** A holder's id, for its colour: kcm, kcm-lease, ccm-lease, ccm, none, unchanged. */
  variant: z.string().optional(),
});
export type Span = z.infer<typeof SpanSchema>;

export const LaneSchema = z.object({
  id: z.string(),
  title: z.string(),
  /** `run`: the workflow's own states; `cloud`: who held the cloud loops; `node`: one node's steps. */
  role: z.enum(['run', 'cloud', 'node']),
  subtitle: z.string().optional(),
  spans: z.array(SpanSchema),
});
export type Lane = z.infer<typeof LaneSchema>;

export const FileStateSchema = z.object({
  exists: z.boolean(),
  sha256: z.string().optional(),
  flags: z.record(z.string(), z.string()).optional(),
});
export type FileState = z.infer<typeof FileStateSchema>;

export const FileDiffSchema = z.object({
  path: z.string(),
  /** As the run's snapshot recorded it before any change. */
  before: FileStateSchema.optional(),
  /** As the node agent last reported it during the run. */
  after: FileStateSchema.optional(),
  changed: z.boolean(),
});
export type FileDiff = z.infer<typeof FileDiffSchema>;

export const RunReportSchema = z.object({
  clusterId: z.string(),
  runId: z.string(),
  kind: z.string(),
  outcome: RunStatusSchema,
  error: RunErrorSchema.optional(),
  startedAt: z.iso.datetime(),
  /** From the first execution's start to the last one's end. */
  durationMs: z.number(),
  /** How many executions the run took (more than one: it was cut and resumed). */
  executions: z.int(),
  lowerBound: z.object({ ms: z.number(), basis: z.string() }).optional(),
  apiRequests: z.int().optional(),
  transitions: z.int().optional(),
  maxUnavailable: z.int().optional(),
  nodes: z.int(),
  lanes: z.array(LaneSchema),
  files: z.array(z.object({ node: z.string(), files: z.array(FileDiffSchema) })),
  /** Whether the twin's invariant monitor was read (its intervals are in the cloud lane). */
  invariantsRead: z.boolean(),
  /** What the records do not say, plainly. */
  notes: z.array(z.string()),
});
export type RunReport = z.infer<typeof RunReportSchema>;
