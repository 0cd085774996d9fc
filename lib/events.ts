/**
 * Every EventBridge event ccm-migrate takes in or puts out: one zod schema each, the single source of their
 * shape for the starter, the run-ended function, the CDK rules' patterns and the tests. Events carry ids and
 * short reasons only: never a kubeconfig, token or credential (EventBridge archives and replays them).
 */
import * as z from 'zod';
import { ResourceName, UpgradeOptionsSchema } from './steps/schemas.ts';
import { RunKindSchema } from './store/run-record.ts';

/** The `source` of every event ccm-migrate publishes or accepts from callers. */
export const EVENT_SOURCE = 'ccm-migrate';

/** An event as EventBridge delivers it: the envelope fields we match on, and the detail. */
function envelope<T extends string, S extends string, D extends z.ZodType>(
  source: S,
  detailType: T,
  detail: D,
) {
  return z.object({
    source: z.literal(source),
    'detail-type': z.literal(detailType),
    detail,
  });
}

const Ids = z.object({ clusterId: ResourceName, runId: ResourceName, kind: RunKindSchema });

/** Start a run for one cluster. The same requestId again starts nothing new (see functions/starter.ts). */
export const MigrationRequestedDetail = z.object({
  clusterId: ResourceName,
  kind: RunKindSchema,
  /** The caller's id of this request: a retried delivery or a repeated `put-events` carries the same one. */
  requestId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64'),
  maxUnavailable: z.int().min(1).max(100).default(1),
  options: UpgradeOptionsSchema.default({}),
});
export type MigrationRequestedDetail = z.infer<typeof MigrationRequestedDetail>;
export const MigrationRequested = envelope(EVENT_SOURCE, 'MigrationRequested', MigrationRequestedDetail);

export const MigrationStartedDetail = Ids.extend({ requestId: z.string(), executionArn: z.string() });
export const MigrationStarted = envelope(EVENT_SOURCE, 'MigrationStarted', MigrationStartedDetail);

export const MigrationSucceededDetail = Ids.extend({ executionArn: z.string() });
export const MigrationSucceeded = envelope(EVENT_SOURCE, 'MigrationSucceeded', MigrationSucceededDetail);

/** An error's name and a short cause; the cause comes from our own errors, which never quote secrets. */
export const MigrationFailedDetail = Ids.extend({
  executionArn: z.string(),
  status: z.enum(['FAILED', 'TIMED_OUT', 'ABORTED']),
  error: z.string().optional(),
  cause: z.string().max(1000).optional(),
});
export const MigrationFailed = envelope(EVENT_SOURCE, 'MigrationFailed', MigrationFailedDetail);

export const MigrationRolledBackDetail = Ids.extend({
  executionArn: z.string(),
  cause: z.string().max(1000).optional(),
});
export const MigrationRolledBack = envelope(EVENT_SOURCE, 'MigrationRolledBack', MigrationRolledBackDetail);

export const DriftDetectedDetail = z.object({
  clusterId: ResourceName,
  /** What differs from the desired mode, one short line each (flags and object names, never contents). */
  findings: z.array(z.string().max(300)).min(1),
});
export const DriftDetected = envelope(EVENT_SOURCE, 'DriftDetected', DriftDetectedDetail);

/**
 * The events ccm-migrate puts on its bus, by detail-type. MigrationRequested is also one of ours: a drift run
 * requests the remediation of a cluster whose policy says autoRemediate (lib/drift/events.ts).
 */
export const OUTGOING_EVENTS = {
  MigrationRequested,
  MigrationStarted,
  MigrationSucceeded,
  MigrationFailed,
  MigrationRolledBack,
  DriftDetected,
} as const;
export type OutgoingEvent = {
  [K in keyof typeof OUTGOING_EVENTS]: z.input<(typeof OUTGOING_EVENTS)[K]>;
}[keyof typeof OUTGOING_EVENTS];

/** The statuses after which no Catch of ours ran, or the run's end needs announcing. */
export const ENDED_STATUSES = ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED'] as const;

/** What Step Functions puts on the default bus when one of our executions ends (the fields we read). */
export const ExecutionStatusChange = envelope(
  'aws.states',
  'Step Functions Execution Status Change',
  z.object({
    executionArn: z.string(),
    stateMachineArn: z.string(),
    status: z.enum(ENDED_STATUSES),
    /** The execution's input as JSON text: our ids (see UpgradeInputSchema). */
    input: z.string().nullish(),
    error: z.string().nullish(),
    cause: z.string().nullish(),
  }),
);
export type ExecutionStatusChange = z.infer<typeof ExecutionStatusChange>;

/** An EventBridge pattern as CDK takes it (`detailType` is synthesized as `detail-type`). */
export interface EventPattern {
  readonly source: string[];
  readonly detailType: string[];
  readonly detail?: Readonly<Record<string, string[]>>;
}

type Envelope = ReturnType<typeof envelope<string, string, z.ZodObject>>;

/** The pattern that matches exactly the envelopes of `schemas` (and the listed detail values, if any). */
export function patternFor(
  schemas: readonly Envelope[],
  detail?: Readonly<Record<string, string[]>>,
): EventPattern {
  return {
    source: [...new Set(schemas.map((s) => s.shape.source.value))],
    detailType: schemas.map((s) => s.shape['detail-type'].value),
    ...(detail ? { detail } : {}),
  };
}

/** The rule that starts runs: every MigrationRequested of a kind we run. */
export const MIGRATION_REQUESTED_PATTERN = patternFor([MigrationRequested], {
  kind: [...RunKindSchema.options],
});

/** What the notification topic gets: runs that need a person's attention. */
export const NOTIFY_PATTERN = patternFor([MigrationFailed, MigrationRolledBack, DriftDetected]);

/** The rule that sees our executions end (the state machine ARNs are added by the stack). */
export function executionEndedPattern(stateMachineArns: string[]): EventPattern {
  return patternFor([ExecutionStatusChange], {
    status: [...ENDED_STATUSES],
    stateMachineArn: stateMachineArns,
  });
}
