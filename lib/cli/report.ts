/**
 * `ccm-migrate report`: one run as a self-contained HTML file (lib/report/), from the records a local run
 * keeps in its state dir: its record and its history; on a twin, the twin's invariants.jsonl and its spec's
 * latencies (the benchmark's lower bound). With --aws, from the execution's history in Step Functions and
 * the run's record in the stack's run table.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { StackTarget } from '../aws/stack-outputs.ts';
import { readHistory } from '../local/history.ts';
import { buildRunReport, type ReportSources } from '../report/build.ts';
import { renderReportHtml } from '../report/html.ts';
import type { RestartLatencies } from '../report/makespan-bound.ts';
import type { RunReport } from '../report/model.ts';
import { historyFromExecution } from '../report/sfn-history.ts';
import { DynamoRunStore } from '../store/dynamo-store.ts';
import { LocalRunStore, readText } from '../store/local-store.ts';
import type { RunRecord } from '../store/run-record.ts';
import type { RunStore } from '../store/run-store.ts';
import { type Violation, ViolationSchema } from '../twin/invariants.ts';
import { type ExecutionOfCluster, executionsOfCluster, historyNewestFirst } from './aws.ts';
import { CliError, EXIT } from './exit-codes.ts';

export interface ReportCommand {
  readonly clusterId: string;
  /** @default the cluster's latest run */
  readonly runId?: string;
  readonly stateDir: string;
  readonly out: string;
  /** The twin's state dir: its invariants.jsonl (absent: the monitor saw nothing) is overlaid. */
  readonly twinDir?: string;
  /** The twin's latencies: the lower bound is then the benchmark's. */
  readonly latencies?: RestartLatencies;
}

async function recordOf(store: LocalRunStore, clusterId: string, runId?: string): Promise<RunRecord> {
  if (runId) {
    const record = await store.get(clusterId, runId);
    if (!record) throw new CliError(`no run ${runId} of cluster ${clusterId} in ${store.dir}`, EXIT.badInput);
    return record;
  }
  const latest = (await store.list(clusterId)).at(-1);
  if (!latest) throw new CliError(`no run of cluster ${clusterId} in ${store.dir}`, EXIT.badInput);
  return latest;
}

/** The twin monitor's intervals; a twin dir without the file is a twin whose monitor saw none. */
export async function readInvariants(twinDir: string): Promise<Violation[]> {
  if (!existsSync(path.join(twinDir, 'kubeconfig'))) {
    throw new CliError(`${twinDir} is not a twin's state dir (it has no kubeconfig)`, EXIT.badInput);
  }
  const file = path.join(twinDir, 'invariants.jsonl');
  return ((await readText(file)) ?? '')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const parsed = ViolationSchema.safeParse(JSON.parse(line));
      if (!parsed.success) throw new CliError(`${file}: line ${i + 1} is not an interval`, EXIT.badInput);
      return parsed.data;
    });
}

/** The report of a local run, as data. */
export async function localRunReport(cmd: Omit<ReportCommand, 'out'>): Promise<RunReport> {
  const store = new LocalRunStore(cmd.stateDir);
  const record = await recordOf(store, cmd.clusterId, cmd.runId);
  const history = await readHistory(store.historyFile(record.clusterId, record.runId));
  if (!history) {
    throw new CliError(
      `run ${record.runId} of cluster ${record.clusterId} has no history in ${store.dir}: only upgrades and downgrades run by this version keep one`,
      EXIT.badInput,
    );
  }
  const sources: ReportSources = {
    record,
    history,
    ...(cmd.twinDir ? { invariants: await readInvariants(cmd.twinDir) } : {}),
    ...(cmd.latencies ? { latencies: cmd.latencies } : {}),
  };
  return buildRunReport(sources);
}

export interface AwsReportCommand {
  readonly clusterId: string;
  /** @default the cluster's latest execution */
  readonly runId?: string;
  readonly sfn: SFNClient;
  readonly target: StackTarget;
  /** The run table (absent: the outcome is the execution's status, and there is no snapshot). */
  readonly store?: RunStore;
}

/** The stack's run table as AwsReportCommand's `store`, when the stack's outputs name it. */
export function runTableOf(target: StackTarget): { store?: RunStore } {
  return target.tableName
    ? { store: new DynamoRunStore({ client: new DynamoDBClient({}), tableName: target.tableName }) }
    : {};
}

/** The run id's prefix says its kind, whichever machine --state-machine-arn named. */
const kindOf = (runId: string): RunRecord['kind'] => (runId.startsWith('down-') ? 'downgrade' : 'upgrade');

/** The outcome an execution's status says, for a run whose record was not read. */
function recordOfExecution(
  clusterId: string,
  e: ExecutionOfCluster,
  history: ReportSources['history'],
): RunRecord {
  const error = history.findLast((h) => h.type === 'run-ended')?.error;
  const status =
    e.status === 'SUCCEEDED'
      ? 'succeeded'
      : e.status === 'RUNNING' || e.status === 'PENDING_REDRIVE'
        ? 'running'
        : error?.name === 'RolledBack'
          ? 'rolled-back'
          : 'failed';
  const startedAt = (e.startDate ?? new Date(0)).toISOString();
  return {
    clusterId,
    runId: e.runId,
    kind: kindOf(e.runId),
    status,
    startedAt,
    updatedAt: (e.stopDate ?? e.startDate ?? new Date(0)).toISOString(),
    steps: {},
    ...(error ? { error: { name: error.name, message: error.cause } } : {}),
  };
}

/** The report of a run on the deployed stack, as data. */
export async function awsRunReport(cmd: AwsReportCommand): Promise<RunReport> {
  const executions = await executionsOfCluster(cmd.sfn, cmd.target, cmd.clusterId);
  const execution = cmd.runId ? executions.find((e) => e.runId === cmd.runId) : executions[0];
  if (!execution) {
    const which = cmd.runId ? `run ${cmd.runId}` : 'run';
    throw new CliError(
      `no ${which} of cluster ${cmd.clusterId} on the stack's state machines`,
      EXIT.badInput,
    );
  }
  const events = [];
  for await (const e of historyNewestFirst(cmd.sfn, execution.executionArn)) events.push(e);
  const history = historyFromExecution(kindOf(execution.runId), events.reverse());
  const record = await cmd.store?.get(cmd.clusterId, execution.runId);
  const notes = [
    "Step Functions' history has no progress lines: no restart or taint is drawn, and no API request counted",
    ...(record
      ? []
      : [
          'no run record was read (the stack outputs name no run table): the outcome is the execution’s status, and without the snapshot there are no node files',
        ]),
  ];
  return buildRunReport({
    record: record ?? recordOfExecution(cmd.clusterId, execution, history),
    history,
    notes,
  });
}

/** Writes the report's HTML to `out`; an unwritable path is bad input, said plainly. */
export async function writeReport(report: RunReport, out: string): Promise<void> {
  try {
    await writeFile(out, renderReportHtml(report), { mode: 0o644 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new CliError(`cannot write the report to ${out} (${code})`, EXIT.badInput);
  }
}

/** Writes the report of a local run (`cmd`) or of a run on the stack (`cmd.aws`) to `cmd.out`. */
export async function reportCommand(
  cmd: ReportCommand | (AwsReportCommand & { aws: true; out: string }),
  out: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const report = 'aws' in cmd ? await awsRunReport(cmd) : await localRunReport(cmd);
  await writeReport(report, cmd.out);
  out.write(`report of ${report.kind} ${report.runId} (${report.outcome}) written to ${cmd.out}\n`);
}
