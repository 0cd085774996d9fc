/**
 * Drift checks over a fleet in local mode: the drift state machine's ASL run in-process, each cluster
 * reached through its kubeconfig file, `maxConcurrency` clusters at once (the Map's concurrency), and the
 * events a Lambda would put on the bus collected in memory for the caller to print.
 */
import { randomBytes } from 'node:crypto';
import { driftDefinition } from '../../state-machines/drift.ts';
import { DRIFT_STEP_IDS, type StepId } from '../../state-machines/steps.ts';
import { clientsFromKubeconfigFile } from '../kube/clients.ts';
import { localContext } from '../local/context.ts';
import { type LocalRunResult, runLocally, type StepHandler } from '../local/engine.ts';
import { type RenderedWorkflow, renderDefinition } from '../local/render.ts';
import { runStep } from '../steps/index.ts';
import { STEP_BUDGET_MS } from '../steps/time-budget.ts';
import type { RunStore } from '../store/run-store.ts';
import type { DriftEvent } from './events.ts';
import type { FleetMember } from './fleet-file.ts';
import { type DriftStepContext, type FleetDriftInput, FleetDriftInputSchema } from './steps.ts';
import { type DriftSummary, DriftSummarySchema, type FleetSummary, FleetSummarySchema } from './summary.ts';

export interface FleetRunOptions {
  readonly members: readonly FleetMember[];
  readonly depth?: FleetDriftInput['depth'];
  readonly maxConcurrency?: number;
  readonly runId?: string;
  /** The node agent's image, for deep checks. */
  readonly agentImage?: string;
  readonly waitMs?: number;
  readonly pollMs?: number;
  /** Retry pauses per state name in ms (tests); the definition's own intervals otherwise. */
  readonly retryIntervalOverrides?: Readonly<Record<string, number | number[]>>;
  readonly now?: () => number;
  /** Where a kubelet remediation records its run (a cluster whose policy asks for one). */
  readonly store?: RunStore;
}

export interface FleetRunResult extends LocalRunResult {
  readonly runId: string;
  /** One per cluster, in the fleet file's order. */
  readonly results: DriftSummary[];
  readonly summary?: FleetSummary;
  /** What would have gone on the bus: DriftDetected, and MigrationRequested where a policy asks. */
  readonly events: DriftEvent[];
}

let rendered: RenderedWorkflow | undefined;

/** The drift workflow's ASL, rendered once per process. */
export function driftWorkflow(): RenderedWorkflow {
  rendered ??= renderDefinition(driftDefinition);
  return rendered;
}

export function driftRunId(now = Date.now()): string {
  return `drift-${now.toString(36)}-${randomBytes(2).toString('hex')}`;
}

export async function runFleetDriftLocally(opts: FleetRunOptions): Promise<FleetRunResult> {
  const byId = new Map(opts.members.map((m) => [m.clusterId, m]));
  const events: DriftEvent[] = [];
  const ctx: DriftStepContext = {
    clusters: {
      get: async (id) => byId.get(id),
      list: async () => [...opts.members],
    },
    clusterContext: async (id) => {
      const member = byId.get(id);
      if (!member) throw new Error(`cluster ${id} is not in the fleet`); // list-clusters gave it: a bug
      return localContext({
        clients: clientsFromKubeconfigFile(member.kubeconfig, member.context),
        // One invocation of check-drift, as in Lambda: the drift workflow's Retry resumes a cut one.
        stepBudgetMs: STEP_BUDGET_MS,
        ...(opts.agentImage ? { agentImage: opts.agentImage } : {}),
        ...(opts.waitMs !== undefined ? { waitMs: opts.waitMs } : {}),
        ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}),
      });
    },
    publish: async (event) => {
      events.push(event);
    },
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.store ? { store: opts.store } : {}),
  };
  const handlers = Object.fromEntries(
    DRIFT_STEP_IDS.map((id) => [id, (event: unknown) => runStep(id, event, ctx)]),
  ) as Record<StepId, StepHandler>;
  const input = FleetDriftInputSchema.parse({
    runId: opts.runId ?? driftRunId(),
    depth: opts.depth,
    maxConcurrency: opts.maxConcurrency,
  });
  const result = await runLocally({
    workflow: driftWorkflow(),
    handlers,
    input,
    ...(opts.retryIntervalOverrides ? { retryIntervalOverrides: opts.retryIntervalOverrides } : {}),
  });
  const output = (result.output ?? {}) as { results?: unknown; summary?: unknown };
  return {
    ...result,
    runId: input.runId,
    results: output.results === undefined ? [] : DriftSummarySchema.array().parse(output.results),
    ...(output.summary !== undefined ? { summary: FleetSummarySchema.parse(output.summary) } : {}),
    events,
  };
}
