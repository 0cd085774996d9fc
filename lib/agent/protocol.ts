/**
 * The node agent's contract: what the orchestrator asks of it (in the Job's environment) and what it
 * answers (through the container's termination message). One schema for both sides.
 */
import * as z from 'zod';

/** Pods with this label value under `app.kubernetes.io/name` run the agent. */
export const AGENT_NAME = 'ccm-migrate-agent';
/** Environment variable carrying the JSON request. */
export const AGENT_REQUEST_ENV = 'CCM_MIGRATE_AGENT_REQUEST';
/** Kubernetes keeps at most 4096 bytes of a termination message. */
export const TERMINATION_MESSAGE_LIMIT = 4096;

export const InspectRequestSchema = z.object({
  op: z.literal('inspect'),
  runId: z.string().min(1),
  /** Absolute host paths to report on. */
  paths: z.array(z.string().startsWith('/')).min(1),
});

export const AgentRequestSchema = z.discriminatedUnion('op', [InspectRequestSchema]);
export type AgentRequest = z.infer<typeof AgentRequestSchema>;

export const FileReportSchema = z.object({
  path: z.string(),
  exists: z.boolean(),
  sha256: z.string().optional(),
  size: z.number().optional(),
});
export type FileReport = z.infer<typeof FileReportSchema>;

export const AgentResultSchema = z.object({
  op: z.string(),
  ok: z.boolean(),
  /** Whether the agent changed anything on the host. */
  changed: z.boolean(),
  /** The agent asks the node to restart kubelet once it has exited. */
  restartKubelet: z.boolean().default(false),
  files: z.array(FileReportSchema).default([]),
  error: z.string().optional(),
});
export type AgentResult = z.infer<typeof AgentResultSchema>;
