/**
 * The drift workflow's steps (state-machines/drift.ts), each a plain function of (event, context). Unlike a
 * migration step, whose context is one cluster's, these get the registry and a way to reach any registered
 * cluster: in local mode from a fleet file's kubeconfig paths, in Lambda from each cluster's secret.
 * Payloads carry ids and summaries only, never a kubeconfig.
 */
import * as z from 'zod';
import { CcmMigrateError, InvalidInputError } from '../errors.ts';
import type { ExamineContext } from '../steps/preflight.ts';
import { ResourceName } from '../steps/schemas.ts';
import { checkDrift } from './check.ts';
import { type DriftEvent, driftEvents, type FleetCluster } from './events.ts';
import { DesiredModeSchema } from './findings.ts';
import {
  type DriftSummary,
  DriftSummarySchema,
  type FleetSummary,
  summarizeFleet,
  summarizeReport,
  unknownSummary,
} from './summary.ts';

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

export const CheckDriftEventSchema = z.object({
  clusterId: ResourceName,
  runId: ResourceName.optional(),
  /** Overrides the registry's desiredMode (a one-off check). */
  expect: DesiredModeSchema.optional(),
  depth: DepthSchema,
});

export const PublishDriftEventSchema = z.object({
  runId: ResourceName,
  summary: DriftSummarySchema,
});

export const SummarizeDriftEventSchema = z.object({
  runId: ResourceName,
  results: z.array(DriftSummarySchema),
});

async function registered(ctx: DriftStepContext, clusterId: string): Promise<FleetCluster> {
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

/**
 * One cluster's check against its desired mode. A cluster that cannot be observed for good (refused,
 * unregistered, no kubeconfig) is reported unknown here, with why; throttling and an unreachable API are
 * thrown for the state machine to retry, and its Catch reports unknown once retries are spent.
 */
export async function checkClusterDrift(
  event: z.infer<typeof CheckDriftEventSchema>,
  ctx: DriftStepContext,
): Promise<DriftSummary> {
  try {
    const cluster = await registered(ctx, event.clusterId);
    const report = await checkDrift(await ctx.clusterContext(cluster.clusterId), {
      clusterId: cluster.clusterId,
      provider: cluster.provider,
      expect: event.expect ?? cluster.desiredMode,
      deep: event.depth === 'deep',
      throwRetryable: true,
      ...(ctx.now ? { now: ctx.now } : {}),
    });
    return summarizeReport(report);
  } catch (err) {
    // Retrying cannot help: say why here, where the message is still ours and short.
    if (err instanceof CcmMigrateError && !err.retryable) {
      return unknownSummary(event.clusterId, `${err.name}: ${err.message}`);
    }
    throw err;
  }
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
