/** `ccm-migrate drift`: one cluster's drift report as a table or JSON, with an exit code for scripts. */

import { checkDrift } from '../drift/check.ts';
import { expectationFromRuns } from '../drift/expectation.ts';
import type { DesiredMode, DriftReport } from '../drift/findings.ts';
import type { KubeClients } from '../kube/clients.ts';
import { localContext } from '../local/context.ts';
import { detectProvider } from '../providers/provider-id.ts';
import { listNodes } from '../steps/cluster.ts';
import type { RunStore } from '../store/run-store.ts';
import { CliError, EXIT } from './exit-codes.ts';

export interface DriftCommand {
  readonly clients: KubeClients;
  readonly store: RunStore;
  readonly clusterId: string;
  readonly expect?: DesiredMode;
  readonly provider?: string;
  readonly deep: boolean;
  readonly json: boolean;
  readonly agentImage?: string;
  readonly out?: NodeJS.WritableStream;
}

export function renderReport(report: DriftReport): string {
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
  const ctx = localContext({
    clients: cmd.clients,
    ...(cmd.agentImage ? { agentImage: cmd.agentImage } : {}),
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
  const report = await checkDrift(ctx, { clusterId: cmd.clusterId, provider, expect, deep: cmd.deep });
  (cmd.out ?? process.stdout).write(cmd.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
  if (report.status === 'drifted')
    throw new CliError(`${report.findings.length} drift finding(s)`, EXIT.drifted);
  if (report.status === 'unknown') throw new CliError(`drift unknown: ${report.error}`, EXIT.unreachable);
  return report;
}
