/**
 * What a drift check hands on in a workflow: a small summary per cluster (Step Functions keeps payloads in
 * its history and caps them at 256 KB, so a few findings as one line each, and counts), and the fleet's
 * totals. Pure.
 */
import * as z from 'zod';
import { ResourceName } from '../steps/schemas.ts';
import { DesiredModeSchema, type DriftReport, type Finding } from './findings.ts';

/** Findings a summary shows; the rest are counted (`ccm-migrate drift --cluster-id` shows them all). */
export const SHOWN_FINDINGS = 5;
/** DriftDetected's limit per line. */
const LINE_MAX = 300;

const Counts = z.object({ critical: z.int(), warning: z.int(), info: z.int() });

/**
 * What the workflow's kubelet remediation (remediate-step.ts) returns: its run, the kubelets it flipped and
 * those left in-tree for the next run.
 */
export const RemediatedSchema = z.object({ runId: ResourceName, kubelets: z.int(), left: z.int() });

export const DriftSummarySchema = z.object({
  clusterId: ResourceName,
  status: z.enum(['clean', 'drifted', 'unknown']),
  expect: DesiredModeSchema.optional(),
  depth: z.enum(['shallow', 'deep']).optional(),
  /** Findings per severity. */
  counts: Counts,
  /** The first SHOWN_FINDINGS findings, one line each (flags and object names, never file contents). */
  findings: z.array(z.string().max(LINE_MAX)).max(SHOWN_FINDINGS),
  apiRequests: z.int().optional(),
  /** Why the cluster could not be observed (unknown): an error name and our own message. */
  error: z.string().max(1000).optional(),
  /** Set by the workflow when DriftDetected (or the remediation request) could not be published. */
  publishFailed: z.object({ error: z.string() }).optional(),
  /**
   * `kubelets`: the cluster's policy asks for remediation and its only critical drift is kubelets on the
   * in-tree provider of an external cluster; the workflow flips them itself (remediate-step.ts) instead of
   * requesting an upgrade.
   */
  remediation: z.literal('kubelets').optional(),
  /** That remediation's run and how many kubelets it flipped. */
  remediated: RemediatedSchema.optional(),
  /** Set by the workflow when the remediation failed (its run record says how it ended). */
  remediationFailed: z.object({ error: z.string() }).optional(),
});
export type DriftSummary = z.infer<typeof DriftSummarySchema>;

export function findingLine(f: Finding): string {
  const line = `${f.severity} ${f.kind} ${f.object}: expected ${f.expected}; seen ${f.seen}`;
  return line.length > LINE_MAX ? `${line.slice(0, LINE_MAX - 1)}…` : line;
}

export function countBySeverity(findings: readonly Finding[]): z.infer<typeof Counts> {
  const counts = { critical: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity] += 1;
  return counts;
}

export function summarizeReport(report: DriftReport): DriftSummary {
  return {
    clusterId: report.clusterId,
    status: report.status,
    expect: report.expect,
    depth: report.depth,
    counts: countBySeverity(report.findings),
    findings: report.findings.slice(0, SHOWN_FINDINGS).map(findingLine),
    apiRequests: report.apiRequests,
    ...(report.error !== undefined ? { error: report.error.slice(0, 1000) } : {}),
  };
}

/** A cluster that could not be checked at all (the Catch of the per-cluster branch). */
export function unknownSummary(clusterId: string, error: string): DriftSummary {
  return {
    clusterId,
    status: 'unknown',
    counts: { critical: 0, warning: 0, info: 0 },
    findings: [],
    error: error.slice(0, 1000),
  };
}

export const FleetSummarySchema = z.object({
  runId: ResourceName,
  clusters: z.int(),
  clean: z.int(),
  drifted: z.array(ResourceName),
  unknown: z.array(ResourceName),
});
export type FleetSummary = z.infer<typeof FleetSummarySchema>;

export function summarizeFleet(runId: string, results: readonly DriftSummary[]): FleetSummary {
  const ids = (status: DriftSummary['status']) =>
    results.filter((r) => r.status === status).map((r) => r.clusterId);
  return {
    runId,
    clusters: results.length,
    clean: ids('clean').length,
    drifted: ids('drifted'),
    unknown: ids('unknown'),
  };
}
