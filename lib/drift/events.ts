/**
 * The events a drifted cluster gives rise to: one DriftDetected, and, where the cluster's policy says
 * autoRemediate and a finding is critical, a MigrationRequested back to its desired mode. A warning or info
 * finding is reported only: a whole migration run (nodes drained, the control plane restarted) is no
 * remedy for a skewed image or a leftover Job; nor for kubelets that came back in-tree on an external
 * cluster, which the workflow flips itself (remediate-step.ts). The request is published, never run inline:
 * the starter takes it like any other (one run per cluster, its lock, its execution name), and its requestId
 * is derived from the drift run and the cluster, so a retried publish starts nothing twice. Pure.
 */
import { createHash } from 'node:crypto';
import type * as z from 'zod';
import { DriftDetected, EVENT_SOURCE, MigrationRequested } from '../events.ts';
import type { ClusterRecord } from '../store/registry.ts';
import { parseInput } from '../store/run-record.ts';
import type { DriftSummary } from './summary.ts';

export type DriftEvent = z.input<typeof DriftDetected> | z.input<typeof MigrationRequested>;

/** What the drift steps need to know of a registered cluster (a ClusterRecord has it). */
export interface FleetCluster {
  readonly clusterId: string;
  readonly provider: ClusterRecord['provider'];
  readonly desiredMode: ClusterRecord['desiredMode'];
  readonly policy: Pick<ClusterRecord['policy'], 'maxUnavailable' | 'autoRemediate'>;
}

/** `drift-<40 hex>`: the same drift run and cluster always give the same id (≤ 64 characters). */
export function remediationRequestId(runId: string, clusterId: string): string {
  return `drift-${createHash('sha256').update(`${runId}/${clusterId}`).digest('hex').slice(0, 40)}`;
}

export function driftEvents(summary: DriftSummary, cluster: FleetCluster, runId: string): DriftEvent[] {
  if (summary.status !== 'drifted') return [];
  const total = summary.counts.critical + summary.counts.warning + summary.counts.info;
  const hidden = total - summary.findings.length;
  const findings = hidden > 0 ? [...summary.findings, `and ${hidden} more finding(s)`] : summary.findings;
  const events: DriftEvent[] = [
    parseInput(
      DriftDetected,
      {
        source: EVENT_SOURCE,
        'detail-type': 'DriftDetected',
        detail: { clusterId: cluster.clusterId, findings },
      },
      'DriftDetected event',
    ),
  ];
  // Kubelets back on the in-tree provider are flipped by the drift workflow itself: no upgrade run for them.
  if (cluster.policy.autoRemediate && summary.counts.critical > 0 && summary.remediation !== 'kubelets') {
    events.push(
      parseInput(
        MigrationRequested,
        {
          source: EVENT_SOURCE,
          'detail-type': 'MigrationRequested',
          detail: {
            clusterId: cluster.clusterId,
            kind: cluster.desiredMode === 'external' ? 'upgrade' : 'downgrade',
            requestId: remediationRequestId(runId, cluster.clusterId),
            maxUnavailable: cluster.policy.maxUnavailable,
          },
        },
        'MigrationRequested event',
      ),
    );
  }
  return events;
}
