/**
 * The migrations' approval gate (state-machines/approval-gate.ts): the request it publishes to the approval
 * topic (a topic of its own: the request's token answers it), and the two answers. The request holds the
 * task token Step Functions waits on, since that token is the only handle SendTaskSuccess/SendTaskFailure
 * take; it holds no credential and no cluster data beyond ids and counts. Local mode gets the same request
 * and answers it in-process (lib/local/approval.ts).
 */
import * as z from 'zod';
import { ResourceName } from '../steps/schemas.ts';

/** The request's `kind`, also its SNS message attribute: a subscription can filter on `kind`. */
export const APPROVAL_REQUESTED = 'ApprovalRequested';

const ApprovalRequestSchema = z.object({
  kind: z.literal(APPROVAL_REQUESTED),
  /**
   * Which run waits: an upgrade, or a downgrade back in-tree (a request published before downgrades had a
   * gate is an upgrade's).
   */
  migration: z.enum(['upgrade', 'downgrade']).default('upgrade'),
  clusterId: ResourceName,
  runId: ResourceName,
  /** From preflight: what the operator is asked to let change. */
  provider: z.string(),
  kubernetesVersion: z.string(),
  nodes: z.int().min(0),
  taskToken: z.string().min(1),
  /** The command lines that answer it (with the stack target options of the other `--aws` commands). */
  approve: z.string(),
  reject: z.string(),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

function parsedJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * The gate Task's parameters as the answerer sees them: the local engine passes them as an object,
 * Step Functions' history as JSON text, with the message an object (or JSON text once serialized for SNS).
 */
export const ApprovalTaskParametersSchema = z.preprocess(
  parsedJson,
  z.object({ Message: z.preprocess(parsedJson, ApprovalRequestSchema) }),
);

/** SendTaskSuccess's output: the gate discards it (the state stays as preflight left it). */
export const APPROVED = { approved: true } as const;
