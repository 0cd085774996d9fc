/**
 * `ccm-migrate drift`: one cluster's drift report as a table or JSON, or (`--registry FILE`) every cluster
 * of a fleet file checked by the drift workflow, one line each; with an exit code for scripts. With
 * `--remediate`, kubelets found in-tree on an external cluster are flipped and the cluster checked again.
 */

import { checkDrift } from '../drift/check.ts';
import { expectationFromRuns } from '../drift/expectation.ts';
import type { DesiredMode, DriftReport } from '../drift/findings.ts';
import { loadFleetFile } from '../drift/fleet-file.ts';
import { type FleetRunResult, runFleetDriftLocally } from '../drift/local-fleet.ts';
import { remediateKubelets } from '../drift/remediate.ts';
import type { DriftSummary } from '../drift/summary.ts';
import type { KubeClients } from '../kube/clients.ts';
import { localContext } from '../local/context.ts';
import { newRunId } from '../local/migration.ts';
import { detectProvider } from '../providers/provider-id.ts';
import { listNodes } from '../steps/cluster.ts';
import type { RunStore } from '../store/run-store.ts';
import { CliError, EXIT } from './exit-codes.ts';
import { progressPrinter } from './migration.ts';

export interface DriftCommand {
  readonly clients: KubeClients;
  readonly store: RunStore;
  readonly clusterId: string;
  readonly expect?: DesiredMode;
  readonly provider?: string;
  readonly deep: boolean;
  readonly json: boolean;
  /**
   * Flip the kubelets the deep check finds on the in-tree provider of a cluster that should be external
   * (lib/drift/remediate.ts), then check again: the exit code is the second check's.
   */
  readonly remediate?: { readonly maxUnavailable: number };
  readonly agentImage?: string;
  readonly out?: NodeJS.WritableStream;
  /** Wait bounds for the remediation (tests); as in Lambda otherwise. */
  readonly waitMs?: number;
  readonly pollMs?: number;
}

function renderReport(report: DriftReport): string {
  const head = `drift of cluster ${report.clusterId} (expected ${report.expect}, ${report.depth} check, ${report.apiRequests} API requests): ${report.status}`;
  if (report.status === 'unknown') return `${head}\n  ${report.error}\n`;
  const rows = report.findings.map(
    (f) =>
      `  ${f.severity.padEnd(8)} ${f.kind.padEnd(26)} ${f.object}\n      expected ${f.expected}\n      seen     ${f.seen}`,
  );
  return `${[head, ...rows].join('\n')}\n`;
}

export async function driftCommand(cmd: DriftCommand): Promise<DriftReport> {
  const fromRuns = await expectationFromRuns(cmd.store, cmd.clusterId);
  const expect = cmd.expect ?? fromRuns?.expect;
  if (!expect) {
    throw new CliError(
      `no finished upgrade or downgrade of cluster ${cmd.clusterId} in the run store says what it should be: pass --expect external|in-tree`,
      EXIT.badInput,
    );
  }
  if (cmd.remediate && (expect !== 'external' || !cmd.deep)) {
    throw new CliError(
      '--remediate flips kubelets that a deep check finds in-tree on a cluster that should be external: pass --deep (and --expect external, unless its last run says so)',
      EXIT.badInput,
    );
  }
  const ctx = localContext({
    clients: cmd.clients,
    ...(cmd.agentImage ? { agentImage: cmd.agentImage } : {}),
    ...(cmd.waitMs !== undefined ? { waitMs: cmd.waitMs } : {}),
    ...(cmd.pollMs !== undefined ? { pollMs: cmd.pollMs } : {}),
  });
  let provider = cmd.provider ?? fromRuns?.provider;
  if (!provider) {
    const nodes = await listNodes(ctx);
    provider = detectProvider({
      providerIDs: nodes.flatMap((n) => (n.spec?.providerID ? [n.spec.providerID] : [])),
      cloudProviderFlags: [],
    })?.provider;
    if (!provider)
      throw new CliError('cannot tell the cluster’s provider from its nodes: pass --provider', EXIT.badInput);
  }
  const out = cmd.out ?? process.stdout;
  const check = async (): Promise<DriftReport> => {
    const report = await checkDrift(ctx, { clusterId: cmd.clusterId, provider, expect, deep: cmd.deep });
    out.write(cmd.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
    return report;
  };
  let report = await check();
  if (cmd.remediate && report.findings.some((f) => f.kind === 'kubelet-flags')) {
    // A remediation cut short (Ctrl-C) still holds the cluster: this one resumes it.
    const unfinished = await cmd.store.current(cmd.clusterId);
    const runId = unfinished?.kind === 'remediate' ? unfinished.runId : newRunId('remediate');
    // Its progress as the upgrade prints it (not in JSON: the output stays one document per report).
    const printer = progressPrinter(out);
    const remediation = await remediateKubelets(
      { clusterId: cmd.clusterId, runId, maxUnavailable: cmd.remediate.maxUnavailable },
      { ...ctx, ...(cmd.json ? {} : { progress: printer.onProgress }), store: cmd.store },
    );
    out.write(
      cmd.json
        ? `${JSON.stringify(remediation, null, 2)}\n`
        : `remediation run ${remediation.runId}: flipped ${remediation.flipped.length} kubelet(s) to --cloud-provider=external (${remediation.flipped.join(', ')}), verified\n`,
    );
    report = await check();
  }
  if (report.status === 'drifted')
    throw new CliError(`${report.findings.length} drift finding(s)`, EXIT.drifted);
  if (report.status === 'unknown') throw new CliError(`drift unknown: ${report.error}`, EXIT.unreachable);
  return report;
}

export interface FleetDriftCommand {
  /** The fleet file (see lib/drift/fleet-file.ts). */
  readonly registry: string;
  readonly deep: boolean;
  readonly json: boolean;
  /** Clusters checked at once. */
  readonly concurrency: number;
  /** Where a kubelet remediation (a cluster whose autoRemediate asks for one) records its run. */
  readonly store?: RunStore;
  readonly agentImage?: string;
  readonly out?: NodeJS.WritableStream;
  /** Retry pauses per state name in ms (tests). */
  readonly retryIntervalOverrides?: Readonly<Record<string, number | number[]>>;
}

function clusterLine(r: DriftSummary): string {
  const { critical, warning, info } = r.counts;
  const what =
    r.status === 'unknown'
      ? (r.error ?? '')
      : r.status === 'drifted'
        ? `${critical} critical, ${warning} warning, ${info} info`
        : '';
  const head = `${r.clusterId.padEnd(24)} ${r.status.padEnd(8)} ${what}`.trimEnd();
  const total = critical + warning + info;
  const more = total > r.findings.length ? [`    … and ${total - r.findings.length} more`] : [];
  const failed = r.publishFailed ? [`    (its event could not be published: ${r.publishFailed.error})`] : [];
  const remediated = r.remediated
    ? [
        `    flipped ${r.remediated.kubelets} kubelet(s) back to external (run ${r.remediated.runId})${r.remediated.left > 0 ? `, ${r.remediated.left} left for the next run` : ''}`,
      ]
    : r.remediationFailed
      ? [`    its kubelets could not be flipped back: ${r.remediationFailed.error}`]
      : [];
  return [head, ...r.findings.map((f) => `    ${f}`), ...more, ...failed, ...remediated].join('\n');
}

function renderFleet(run: FleetRunResult): string {
  const lines = run.results.map(clusterLine);
  for (const e of run.events) {
    lines.push(
      e['detail-type'] === 'MigrationRequested'
        ? `remediation requested: ${e.detail.kind} of ${e.detail.clusterId} (request ${e.detail.requestId})`
        : `event DriftDetected for ${e.detail.clusterId}`,
    );
  }
  const s = run.summary;
  if (s) {
    lines.push(
      `drift run ${s.runId}: ${s.clusters} cluster(s), ${s.clean} clean, ${s.drifted.length} drifted, ${s.unknown.length} unknown`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Exit 10 when any cluster drifted, else 4 when any could not be observed, else 0. */
export async function fleetDriftCommand(cmd: FleetDriftCommand): Promise<FleetRunResult> {
  const members = await loadFleetFile(cmd.registry);
  const run = await runFleetDriftLocally({
    members,
    depth: cmd.deep ? 'deep' : 'shallow',
    maxConcurrency: cmd.concurrency,
    ...(cmd.store ? { store: cmd.store } : {}),
    ...(cmd.agentImage ? { agentImage: cmd.agentImage } : {}),
    ...(cmd.retryIntervalOverrides ? { retryIntervalOverrides: cmd.retryIntervalOverrides } : {}),
  });
  if (run.status !== 'SUCCEEDED') {
    throw new CliError(`the drift run ${run.status}: ${run.error?.name}: ${run.error?.cause}`, EXIT.failed);
  }
  const out = cmd.out ?? process.stdout;
  out.write(
    cmd.json
      ? `${JSON.stringify({ summary: run.summary, results: run.results, events: run.events }, null, 2)}\n`
      : renderFleet(run),
  );
  const drifted = run.results.filter((r) => r.status === 'drifted').length;
  const unknown = run.results.filter((r) => r.status === 'unknown').length;
  if (drifted > 0) throw new CliError(`${drifted} cluster(s) drifted`, EXIT.drifted);
  if (unknown > 0) throw new CliError(`${unknown} cluster(s) could not be observed`, EXIT.unreachable);
  return run;
}
