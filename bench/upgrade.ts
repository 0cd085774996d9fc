/**
 * Upgrade benchmarks, each run as `ccm-migrate upgrade` runs it on a fresh twin of the example AWS cluster
 * (bench/specs.ts), in a process warmed by one small upgrade first (bench/upgrade-run.ts):
 * - makespan against its lower bound (target ≤ 1.15×) at the example's latencies, 3 + 50 nodes in batches
 *   of 5 and, in the full run, 3 + 500 in batches of 50, the example itself and leader migration;
 * - the orchestration's own cost: the 3 + 50 upgrade with every latency at zero, wall time and CPU;
 * - the 3 + 50 run's API requests and state transitions (bench/migration-cost.ts).
 * Timed figures are the median of 3 runs, 1 in --quick; requests and transitions are the median run's.
 */
import type { TwinSpec } from '../lib/twin/spec.ts';
import { requestRows, transitionRows } from './migration-cost.ts';
import { type BenchRow, median } from './report.ts';
import { exampleSpec, makespanLowerBoundMs, nodeCount, ZERO_LATENCIES } from './specs.ts';
import { measureUpgrade, type UpgradeMeasurement, warmUp } from './upgrade-run.ts';

interface Case {
  readonly spec: TwinSpec;
  readonly maxUnavailable: number;
  readonly leaderMigration: boolean;
}

function labelOf(c: Case): string {
  return `${nodeCount(c.spec, 'control-plane')} cp + ${nodeCount(c.spec, 'worker')} workers, maxUnavailable ${c.maxUnavailable}`;
}

/** `runs` upgrades of the case, sorted by makespan. */
async function measure(c: Case, runs: number): Promise<UpgradeMeasurement[]> {
  const all: UpgradeMeasurement[] = [];
  for (let i = 0; i < runs; i++) all.push(await measureUpgrade(c.spec, c));
  return all.sort((a, b) => a.result.durationMs - b.result.durationMs);
}

function medianRun(sorted: readonly UpgradeMeasurement[]): UpgradeMeasurement {
  return sorted[Math.floor(sorted.length / 2)] as UpgradeMeasurement;
}

function runsNote(sorted: readonly UpgradeMeasurement[]): string {
  if (sorted.length === 1) return '1 run';
  const s = (m: UpgradeMeasurement | undefined) => ((m?.result.durationMs ?? 0) / 1000).toFixed(1);
  return `median of ${sorted.length} (${s(sorted[0])}–${s(sorted.at(-1))} s)`;
}

const WARM = 'process warmed first (ASL rendered once, as deployed)';

/** The makespan and, without leader migration, its ratio to the lower bound. */
function makespanRows(c: Case, sorted: readonly UpgradeMeasurement[]): BenchRow[] {
  const label = labelOf(c);
  const ms = medianRun(sorted).result.durationMs;
  const cpu = median(sorted.map((m) => m.cpuSeconds));
  // Each leader migration handover waits out up to a lease duration: restarts alone bound nothing there.
  const mode = c.leaderMigration
    ? `with leader migration: three lease handovers of up to ${c.spec.latencies.leaseDuration / 1000} s`
    : 'without leader migration';
  const makespan: BenchRow = {
    name: `upgrade makespan, ${label}${c.leaderMigration ? ', leader migration' : ''}`,
    value: ms / 1000,
    unit: 's',
    note: `${runsNote(sorted)}; ${mode}; CPU ${cpu.toFixed(1)} s (twin and orchestrator); ${WARM}`,
  };
  if (c.leaderMigration) return [makespan];
  const bound = makespanLowerBoundMs(c.spec, c.maxUnavailable);
  return [
    makespan,
    {
      name: `upgrade makespan / lower bound, ${label}`,
      value: ms / bound,
      unit: '×',
      target: 1.15,
      better: 'lower',
      note: `lower bound ${(bound / 1000).toFixed(1)} s from the twin's latencies`,
    },
  ];
}

function overheadRows(c: Case, sorted: readonly UpgradeMeasurement[]): BenchRow[] {
  const label = labelOf(c);
  return [
    {
      name: `orchestration overhead, ${label}, zero latencies: wall`,
      value: medianRun(sorted).result.durationMs / 1000,
      unit: 's',
      note: `${runsNote(sorted)}; ${WARM}`,
    },
    {
      name: `orchestration overhead, ${label}, zero latencies: CPU`,
      value: median(sorted.map((m) => m.cpuSeconds)),
      unit: 's',
      note: 'process CPU over the run: the twin and the orchestrator share the process',
    },
  ];
}

export async function benchUpgrade(opts: { quick: boolean }): Promise<BenchRow[]> {
  const runs = opts.quick ? 1 : 3;
  await warmUp();
  const fifty: Case = {
    spec: await exampleSpec({ workers: 50 }),
    maxUnavailable: 5,
    leaderMigration: false,
  };
  const fiftyRuns = await measure(fifty, runs);
  const zero: Case = { ...fifty, spec: await exampleSpec({ workers: 50, latencies: ZERO_LATENCIES }) };
  const rows = [
    ...makespanRows(fifty, fiftyRuns),
    ...overheadRows(zero, await measure(zero, runs)),
    ...requestRows(medianRun(fiftyRuns), labelOf(fifty)),
    ...transitionRows(medianRun(fiftyRuns), labelOf(fifty), 150),
  ];
  if (opts.quick) return rows;

  const fiveHundred: Case = {
    spec: await exampleSpec({ workers: 500 }),
    maxUnavailable: 50,
    leaderMigration: false,
  };
  const fiveHundredRuns = await measure(fiveHundred, runs);
  const example: Case = { spec: await exampleSpec(), maxUnavailable: 2, leaderMigration: false };
  const migrating: Case = { ...example, leaderMigration: true };
  return [
    ...rows,
    ...makespanRows(fiveHundred, fiveHundredRuns),
    ...transitionRows(medianRun(fiveHundredRuns), labelOf(fiveHundred)),
    ...makespanRows(example, await measure(example, runs)),
    ...makespanRows(migrating, await measure(migrating, runs)),
  ];
}
