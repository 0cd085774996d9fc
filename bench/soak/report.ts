/**
 * What the soak records: one entry per scenario and the campaign's totals (bench/results/soak.json).
 */
import * as z from 'zod';
import { ScenarioSchema } from './scenario.ts';

export const OUTCOMES = ['migrated', 'rolledBack', 'failed'] as const;

/** One run of a scenario's cluster (the upgrade, its resumption, the racing request, the downgrade). */
export const RunEndSchema = z.object({
  what: z.enum(['upgrade', 'killed upgrade', 'resumed upgrade', 'second request', 'downgrade']),
  status: z.string(),
  exitCode: z.int().nullable(),
  error: z.object({ name: z.string(), cause: z.string() }).optional(),
  ms: z.int(),
  /** It took up an unfinished run instead of starting its own. */
  resumed: z.boolean().optional(),
  /** A CLI run's last line: its summary or its error. */
  lastLine: z.string().optional(),
});
export type RunEnd = z.infer<typeof RunEndSchema>;

export const ScenarioResultSchema = z.object({
  seed: z.int(),
  outcome: z.enum(OUTCOMES),
  ms: z.int(),
  runs: z.array(RunEndSchema),
  /** Invariant monitor intervals the run may not cause (API down only outside injected faults). */
  /** `atMs`: from the twin's start, as the scenario's faults are timed. */
  violations: z.array(
    z.object({ kind: z.string(), atMs: z.number(), durationMs: z.number(), detail: z.unknown() }),
  ),
  /** Node files missing, or not as the outcome promises. */
  filesLost: z.array(z.string()),
  /** CCM objects after a way back, unfinished agent Jobs, nodes left tainted. */
  objectsLeft: z.array(z.string()),
  /** Exit codes that do not tell the truth about the cluster, or failures without a named cause. */
  unexpectedExitCodes: z.array(z.string()),
  agentJobsDeleted: z.int(),
  scenario: ScenarioSchema,
});
export type ScenarioResult = z.infer<typeof ScenarioResultSchema>;

export const SoakReportSchema = z.object({
  runs: z.int(),
  seed: z.int(),
  quick: z.boolean(),
  concurrency: z.int(),
  seconds: z.number(),
  seedsPerMinute: z.number(),
  outcomes: z.object({ migrated: z.int(), rolledBack: z.int(), failed: z.int() }),
  violations: z.int(),
  filesLost: z.int(),
  objectsLeft: z.int(),
  unexpectedExitCodes: z.int(),
  /** Every scenario with a finding, whole, and the command that replays it. */
  failures: z.array(ScenarioResultSchema.extend({ replay: z.string() })),
  /** Failed outcomes by error name: the causes the campaign met. */
  failedBy: z.record(z.string(), z.int()),
  machine: z.string(),
});
export type SoakReport = z.infer<typeof SoakReportSchema>;

export function hasFinding(r: ScenarioResult): boolean {
  return r.violations.length + r.filesLost.length + r.objectsLeft.length + r.unexpectedExitCodes.length > 0;
}
