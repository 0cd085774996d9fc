/**
 * Migration benchmarks, each run as `ccm-migrate upgrade|downgrade` runs it on a fresh twin of the example
 * AWS cluster (bench/specs.ts), in a process warmed by one small upgrade and downgrade first
 * (bench/upgrade-run.ts):
 * - makespan against its lower bound, upgrade and then downgrade of the same twin, 3 + 50 nodes in batches
 *   of 5, at the realistic profile (time-compressed, target ≤ 1.05×) and at the short one (≤ 1.10×), with
 *   where the time went; in the full run also 3 + 500 realistic in batches of 25 and 50 (5 and 10 %), up
 *   and back, the example itself and leader migration at the short profile;
 * - the orchestration's own cost: the 3 + 50 upgrade with every latency at zero, wall time and CPU;
 * - the short 3 + 50 run's API requests and state transitions (bench/migration-cost.ts).
 * Timed figures are the median of 3 runs, 1 in --quick; requests and transitions are the median run's.
 */
import type { TwinSpec } from '../lib/twin/spec.ts';
import { requestRows, transitionRows } from './migration-cost.ts';
import { type BenchRow, median } from './report.ts';
import {
  exampleSpec,
  makespanLowerBoundMs,
  nodeCount,
  REALISTIC_TIME_SCALE,
  realisticLatencies,
  ZERO_LATENCIES,
} from './specs.ts';
import { measureUpgrade, type RunMeasurement, type UpgradeMeasurement, warmUp } from './upgrade-run.ts';

interface Case {
  readonly spec: TwinSpec;
  readonly maxUnavailable: number;
  readonly leaderMigration: boolean;
  /** Whether the downgrade of the upgraded twin is measured too. */
  readonly downgrade: boolean;
  /** The target of makespan / bound. */
  readonly target?: number;
}

function labelOf(c: Case): string {
  const profile = c.spec.latencies.profile === 'realistic' ? 'realistic, ' : '';
  return `${profile}${nodeCount(c.spec, 'control-plane')} cp + ${nodeCount(c.spec, 'worker')} workers, maxUnavailable ${c.maxUnavailable}`;
}

/** `runs` migrations of the case. */
async function measure(c: Case, runs: number): Promise<UpgradeMeasurement[]> {
  const all: UpgradeMeasurement[] = [];
  for (let i = 0; i < runs; i++) all.push(await measureUpgrade(c.spec, c));
  return all;
}

/** The run of median makespan. */
function medianRun<T extends RunMeasurement>(runs: readonly T[]): T {
  const sorted = [...runs].sort((a, b) => a.result.durationMs - b.result.durationMs);
  return sorted[Math.floor(sorted.length / 2)] as T;
}

function runsNote(runs: readonly RunMeasurement[]): string {
  if (runs.length === 1) return '1 run';
  const seconds = runs.map((m) => m.result.durationMs / 1000).sort((a, b) => a - b);
  return `median of ${runs.length} (${seconds[0]?.toFixed(1)}–${seconds.at(-1)?.toFixed(1)} s)`;
}

const WARM = 'process warmed first (ASL rendered once, as deployed)';

function scaleNote(spec: TwinSpec): string {
  return spec.latencies.profile === 'realistic'
    ? `; latencies ÷ ${REALISTIC_TIME_SCALE} (bench/specs.ts REALISTIC_TIME_SCALE): × ${REALISTIC_TIME_SCALE} for a real cluster's seconds`
    : '';
}

/** The top-level states that took a tenth of a second or more, in order: where the time went. */
function spansNote(m: RunMeasurement): string {
  return m.spans
    .filter((s) => s.ms >= 100)
    .map((s) => `${s.state} ${(s.ms / 1000).toFixed(1)}`)
    .join('; ');
}

/** The makespan of one kind of run and, without leader migration, its ratio to the lower bound. */
function makespanRows(c: Case, kind: 'upgrade' | 'downgrade', runs: readonly RunMeasurement[]): BenchRow[] {
  const label = labelOf(c);
  const m = medianRun(runs);
  const cpu = median(runs.map((r) => r.cpuSeconds));
  const twinCpu = median(runs.map((r) => r.twinCpuSeconds));
  // Each leader migration handover waits out up to a lease duration: restarts alone bound nothing there.
  const mode = c.leaderMigration
    ? `with leader migration: three lease handovers of up to ${c.spec.latencies.leaseDuration / 1000} s`
    : 'without leader migration';
  const makespan: BenchRow = {
    name: `${kind} makespan, ${label}${c.leaderMigration ? ', leader migration' : ''}`,
    value: m.result.durationMs / 1000,
    unit: 's',
    note: `${runsNote(runs)}; ${mode}; CPU ${cpu.toFixed(1)} s orchestrator, ${twinCpu.toFixed(1)} s twin (its own process); ${WARM}${scaleNote(c.spec)}; the median run's states (s): ${spansNote(m)}`,
  };
  if (c.leaderMigration) return [makespan];
  const bound = makespanLowerBoundMs(c.spec, c.maxUnavailable, kind);
  return [
    makespan,
    {
      name: `${kind} makespan / lower bound, ${label}`,
      value: m.result.durationMs / bound,
      unit: '×',
      ...(c.target === undefined ? {} : { target: c.target, better: 'lower' as const }),
      note: `lower bound ${(bound / 1000).toFixed(1)} s from the twin's latencies (bench/specs.ts)`,
    },
  ];
}

function caseRows(c: Case, runs: readonly UpgradeMeasurement[]): BenchRow[] {
  const downgrades = runs.flatMap((r) => (r.downgrade ? [r.downgrade] : []));
  return [
    ...makespanRows(c, 'upgrade', runs),
    ...(downgrades.length > 0 ? makespanRows(c, 'downgrade', downgrades) : []),
  ];
}

function overheadRows(c: Case, runs: readonly UpgradeMeasurement[]): BenchRow[] {
  const label = labelOf(c);
  return [
    {
      name: `orchestration overhead, ${label}, zero latencies: wall`,
      value: medianRun(runs).result.durationMs / 1000,
      unit: 's',
      note: `${runsNote(runs)}; ${WARM}`,
    },
    {
      name: `orchestration overhead, ${label}, zero latencies: CPU`,
      value: median(runs.map((m) => m.cpuSeconds)),
      unit: 's',
      note: `the orchestrator's process over the run; the twin's, in its own process: ${median(runs.map((m) => m.twinCpuSeconds)).toFixed(1)} s`,
    },
  ];
}

export async function benchUpgrade(opts: { quick: boolean }): Promise<BenchRow[]> {
  const runs = opts.quick ? 1 : 3;
  await warmUp();
  const realistic: Case = {
    spec: await exampleSpec({ workers: 50, latencies: realisticLatencies() }),
    maxUnavailable: 5,
    leaderMigration: false,
    downgrade: true,
    target: 1.05,
  };
  const short: Case = { ...realistic, spec: await exampleSpec({ workers: 50 }), target: 1.1 };
  const shortRuns = await measure(short, runs);
  const zero: Case = {
    ...short,
    spec: await exampleSpec({ workers: 50, latencies: ZERO_LATENCIES }),
    downgrade: false,
  };
  const rows = [
    ...caseRows(realistic, await measure(realistic, runs)),
    ...caseRows(short, shortRuns),
    ...overheadRows(zero, await measure(zero, runs)),
    ...requestRows(medianRun(shortRuns), labelOf(short)),
    ...transitionRows(medianRun(shortRuns), labelOf(short), 150),
  ];
  if (opts.quick) return rows;

  const fiveHundredSpec = await exampleSpec({ workers: 500, latencies: realisticLatencies() });
  const fiveHundredRows: BenchRow[] = [];
  for (const maxUnavailable of [25, 50]) {
    const fiveHundred: Case = { ...realistic, spec: fiveHundredSpec, maxUnavailable };
    const fiveHundredRuns = await measure(fiveHundred, 1);
    fiveHundredRows.push(
      ...caseRows(fiveHundred, fiveHundredRuns),
      ...transitionRows(medianRun(fiveHundredRuns), labelOf(fiveHundred)),
    );
  }
  const example: Case = {
    spec: await exampleSpec(),
    maxUnavailable: 2,
    leaderMigration: false,
    downgrade: false,
  };
  const migrating: Case = { ...example, leaderMigration: true };
  return [
    ...rows,
    ...fiveHundredRows,
    ...caseRows(example, await measure(example, runs)),
    ...caseRows(migrating, await measure(migrating, runs)),
  ];
}
