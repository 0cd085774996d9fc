/**
 * The drift workflow's steps (state-machines/drift.ts), each a plain function of (event, context). Unlike a
 * migration step, whose context is one cluster's, these get the registry and a way to reach any registered
 * cluster: in local mode from a fleet file's kubeconfig paths, in Lambda from each cluster's secret.
 * Payloads carry ids and summaries only, never a kubeconfig. The one step that reaches a cluster,
 * check-drift, is in check-step.ts: the others' functions are bundled without a Kubernetes client.
 */
import * as z from 'zod';
import { InvalidInputError } from '../errors.ts';
import type { ExamineContext } from '../steps/preflight.ts';
import { ResourceName } from '../steps/schemas.ts';
import type { RunStore } from '../store/run-store.ts';
import { type DriftEvent, driftEvents, type FleetCluster } from './events.ts';
import { DriftSummarySchema, type FleetSummary, summarizeFleet } from './summary.ts';

export interface DriftStepContext {
  /** The registered clusters: the cluster registry in AWS, the fleet file in local mode. */
  readonly clusters: {
    get(clusterId: string): Promise<FleetCluster | undefined>;
    list(): Promise<FleetCluster[]>;
  };
  /** Access to one registered cluster; a cluster that cannot be reached at all throws a named error. */
  readonly clusterContext: (clusterId: string) => Promise<ExamineContext>;
  /** Puts an event on the bus (AWS) or collects it (local mode). */
  readonly publish: (event: DriftEvent) => Promise<void>;
  /** Where a remediation records its run: the run table (AWS), the state dir (local mode). */
  readonly store?: RunStore;
  readonly now?: () => number;
}

export const DepthSchema = z.enum(['shallow', 'deep']);

/** The drift state machine's input: what the schedule (or `ccm-migrate drift --registry`) passes. */
export const FleetDriftInputSchema = z.object({
  runId: ResourceName,
  depth: DepthSchema.default('shallow'),
  /** Clusters checked at once. */
  maxConcurrency: z.int().min(1).max(1000).default(10),
});
export type FleetDriftInput = z.infer<typeof FleetDriftInputSchema>;

export const ListClustersEventSchema = z.object({});

export const PublishDriftEventSchema = z.object({
  runId: ResourceName,
  summary: DriftSummarySchema,
});

export const SummarizeDriftEventSchema = z.object({
  runId: ResourceName,
  results: z.array(DriftSummarySchema),
});

export async function registered(ctx: DriftStepContext, clusterId: string): Promise<FleetCluster> {
  const cluster = await ctx.clusters.get(clusterId);
  if (!cluster) throw new InvalidInputError(`cluster ${clusterId} is not in the registry`);
  return cluster;
}

/** The ids of every registered cluster: the Map's items (ids only, so that thousands fit a payload). */
export async function listClusters(
  _event: z.infer<typeof ListClustersEventSchema>,
  ctx: DriftStepContext,
): Promise<string[]> {
  return (await ctx.clusters.list()).map((c) => c.clusterId);
}

/** DriftDetected for a drifted cluster, and a remediation request where its policy asks for one. */
export async function publishDrift(
  event: z.infer<typeof PublishDriftEventSchema>,
  ctx: DriftStepContext,
): Promise<{ published: DriftEvent['detail-type'][] }> {
  const cluster = await registered(ctx, event.summary.clusterId);
  const events = driftEvents(event.summary, cluster, event.runId);
  for (const e of events) await ctx.publish(e);
  return { published: events.map((e) => e['detail-type']) };
}

export async function summarizeDrift(
  event: z.infer<typeof SummarizeDriftEventSchema>,
  _ctx: DriftStepContext,
): Promise<FleetSummary> {
  return summarizeFleet(event.runId, event.results);
}
