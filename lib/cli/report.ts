/**
 * `ccm-migrate report`: one run as a self-contained HTML file (lib/report/), from the records a local run
 * keeps in its state dir: its record and its history; on a twin, the twin's invariants.jsonl and its spec's
 * latencies (the benchmark's lower bound).
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readHistory } from '../local/history.ts';
import { buildRunReport, type ReportSources } from '../report/build.ts';
import { renderReportHtml } from '../report/html.ts';
import type { RestartLatencies } from '../report/makespan-bound.ts';
import type { RunReport } from '../report/model.ts';
import { LocalRunStore } from '../store/local-store.ts';
import type { RunRecord } from '../store/run-record.ts';
import { type Violation, ViolationSchema } from '../twin/invariants.ts';
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
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return text
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

/** Writes the report's HTML to `out`; an unwritable path is bad input, said plainly. */
export async function writeReport(report: RunReport, out: string): Promise<void> {
  try {
    await writeFile(out, renderReportHtml(report), { mode: 0o644 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new CliError(`cannot write the report to ${out} (${code})`, EXIT.badInput);
  }
}

export async function reportCommand(cmd: ReportCommand, out: NodeJS.WritableStream = process.stdout) {
  const report = await localRunReport(cmd);
  await writeReport(report, cmd.out);
  out.write(`report of ${report.kind} ${report.runId} (${report.outcome}) written to ${cmd.out}\n`);
}
