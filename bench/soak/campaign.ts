/**
 * A campaign: seeds `seed` … `seed + runs - 1`, each drawn into its scenario and run on a fresh twin,
 * `concurrency` at a time, summed into the report that bench/results/soak.json holds.
 */
import os from 'node:os';
import pLimit from 'p-limit';
import { hasFinding, type ScenarioResult, type SoakReport } from './report.ts';
import { runScenario } from './run-scenario.ts';
import { drawScenario } from './scenario.ts';

export interface CampaignOptions {
  readonly runs: number;
  readonly seed: number;
  readonly concurrency: number;
  /** Scenarios of the quick slice (drawScenario's `quick`). */
  readonly quick?: boolean;
  /** Each scenario's result as it ends, and the report so far (progress; a campaign cut short keeps it). */
  readonly onResult?: (r: ScenarioResult, soFar: SoakReport) => void;
}

/** The one command that replays a seed. */
export function replayCommand(seed: number, quick = false): string {
  return `npm run soak -- --runs 1 --seed ${seed}${quick ? ' --quick' : ''}`;
}

/** A scenario whose own machinery failed (the twin did not start …) is a finding, not a pass. */
export async function runSeed(seed: number, quick = false): Promise<ScenarioResult> {
  const scenario = drawScenario(seed, { quick });
  const started = Date.now();
  try {
    return await runScenario(scenario);
  } catch (err) {
    return {
      seed,
      outcome: 'failed',
      ms: Date.now() - started,
      runs: [],
      violations: [],
      filesLost: [],
      objectsLeft: [],
      unexpectedExitCodes: [`the soak itself failed: ${(err as Error).message}`],
      agentJobsDeleted: 0,
      scenario,
    };
  }
}

/** The report of the scenarios run so far (all of them at the end). */
export function summarise(
  results: readonly ScenarioResult[],
  opts: Omit<CampaignOptions, 'onResult'>,
  seconds: number,
): SoakReport {
  const count = (pick: (r: ScenarioResult) => readonly unknown[]): number =>
    results.reduce((n, r) => n + pick(r).length, 0);
  const failedBy: Record<string, number> = {};
  for (const r of results.filter((x) => x.outcome === 'failed')) {
    const name = r.runs.findLast((x) => x.error)?.error?.name ?? 'none';
    failedBy[name] = (failedBy[name] ?? 0) + 1;
  }
  return {
    runs: results.length,
    quick: opts.quick ?? false,
    seed: opts.seed,
    concurrency: opts.concurrency,
    seconds: Math.round(seconds),
    seedsPerMinute: Number(((results.length / seconds) * 60).toFixed(1)),
    outcomes: {
      migrated: results.filter((r) => r.outcome === 'migrated').length,
      rolledBack: results.filter((r) => r.outcome === 'rolledBack').length,
      failed: results.filter((r) => r.outcome === 'failed').length,
    },
    violations: count((r) => r.violations),
    filesLost: count((r) => r.filesLost),
    objectsLeft: count((r) => r.objectsLeft),
    unexpectedExitCodes: count((r) => r.unexpectedExitCodes),
    failures: results.filter(hasFinding).map((r) => ({ ...r, replay: replayCommand(r.seed, opts.quick) })),
    failedBy,
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
  };
}

export async function runCampaign(opts: CampaignOptions): Promise<SoakReport> {
  const started = Date.now();
  const limit = pLimit(opts.concurrency);
  const seeds = Array.from({ length: opts.runs }, (_, i) => opts.seed + i);
  const done: ScenarioResult[] = [];
  await Promise.all(
    seeds.map((seed) =>
      limit(async () => {
        const r = await runSeed(seed, opts.quick);
        done.push(r);
        opts.onResult?.(r, summarise(done, opts, (Date.now() - started) / 1000));
      }),
    ),
  );
  return summarise(
    done.sort((a, b) => a.seed - b.seed),
    opts,
    (Date.now() - started) / 1000,
  );
}
