/**
 * One scenario, start to end: a fresh twin with the scenario's faults; the upgrade (killed and resumed, or
 * raced by a second request, as drawn) under the driver's disruptions; the downgrade where drawn; then the
 * checks. Runs in-process through the local engine, as `ccm-migrate upgrade` does, against the twin's
 * kubeconfig; a killed run is the CLI itself in a child process.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { exitCodeForError } from '../../lib/cli/exit-codes.ts';
import { ERROR_NAMES } from '../../lib/errors.ts';
import { clientsFromKubeconfigFile } from '../../lib/kube/clients.ts';
import {
  type MigrationRunOptions,
  type MigrationRunResult,
  runDowngradeLocally,
  runUpgradeLocally,
} from '../../lib/local/migration.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import type { Violation } from '../../lib/twin/invariants.ts';
import { startTwin } from '../../lib/twin/twin.ts';
import { DOWNGRADE_STATES } from '../../state-machines/downgrade.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { scratchDir } from '../specs.ts';
import {
  ccmObjectsLeft,
  filesChangedOutsideRun,
  filesMissing,
  filesNotAsAtStart,
  kubeletsNotRunning,
  restoresWaiting,
  taintedNodes,
  workLeft,
} from './checks.ts';
import { type CliRun, runCli } from './cli-run.ts';
import { startDisruptions } from './disruptions.ts';
import { hashNodeFiles } from './node-files.ts';
import type { RunEnd, ScenarioResult } from './report.ts';
import type { Scenario } from './scenario.ts';
import { scenarioSpec } from './twin-spec.ts';

/**
 * The twin's latencies are milliseconds where a real cluster's are seconds: a step's waits and the retry
 * pauses shrink with them (1 s instead of the definition's 1-5 s and more), so that a soak goes through the
 * same retries within seconds, and still rides out the outages it injects (at most 3 s).
 */
const WAIT_MS = 3_000;
const POLL_MS = 50;
const RETRY_PAUSE_MS = 1_000;
const RETRIES = Object.fromEntries(
  [...Object.values(UPGRADE_STATES), ...Object.values(DOWNGRADE_STATES)].map((state) => [
    state,
    RETRY_PAUSE_MS,
  ]),
);
const NAMED: ReadonlySet<string> = new Set(Object.values(ERROR_NAMES));
/** Exit codes that promise the cluster as it was: rolled back, bad input, preflight, not approved. */
const AS_IT_WAS = new Set([9, 2, 3, 11]);

function ended(what: RunEnd['what'], r: MigrationRunResult): RunEnd {
  const exitCode =
    r.status === 'SUCCEEDED' ? 0 : r.status === 'ABORTED' ? null : exitCodeForError(r.error?.name ?? '');
  return { what, status: r.status, exitCode, ...(r.error ? { error: r.error } : {}), ms: r.durationMs };
}

function cliEnded(what: RunEnd['what'], run: CliRun, ms: number): RunEnd {
  const name = /^(?:ccm-migrate: )?(\w+): /.exec(run.lastLine)?.[1];
  return {
    what,
    status: run.killed ? 'KILLED' : `EXITED ${run.code}`,
    exitCode: run.code,
    ...(name && run.code !== 0 ? { error: { name, cause: run.lastLine } } : {}),
    ms,
    resumed: run.resumed,
    lastLine: run.lastLine.slice(0, 500),
  };
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = Date.now();
  return [await fn(), Date.now() - t];
}

/**
 * The upgrade as drawn: the CLI killed at a state and resumed here; or raced by a second request (the CLI
 * from another terminal, started as this run begins); or plain.
 */
async function upgrade(s: Scenario, base: MigrationRunOptions, cli: readonly string[]): Promise<RunEnd[]> {
  const killAtState = s.killAtState;
  if (killAtState !== undefined) {
    const [killed, ms] = await timed(() => runCli(cli, { killAtState }));
    const first = cliEnded('killed upgrade', killed, ms);
    if (!killed.killed) return [first];
    return [first, ended('resumed upgrade', await runUpgradeLocally(base))];
  }
  if (!s.secondRequest) return [ended('upgrade', await runUpgradeLocally(base))];
  let second: Promise<[CliRun, number]> | undefined;
  let entered = 0;
  const first = await runUpgradeLocally({
    ...base,
    onEvent: (e) => {
      // At its first state: the other terminal's process takes seconds to start, the race is still on.
      if (e.type === 'StateEntered' && ++entered === 1) second = timed(() => runCli(cli));
    },
  });
  const ends = [ended('upgrade', first)];
  if (second) {
    const [run, ms] = await second;
    ends.push(cliEnded('second request', run, ms));
  }
  return ends;
}

/** Past an outage's end (or an interval's edge) within which what follows is still the outage's doing. */
const GRACE_MS = 2_000;

/**
 * A violation of the runs' making: not one open before the first run began (IBM's nodes wait uninitialised
 * from birth), nor an API outage the scenario injected (its outage windows, its crash-looping or lost
 * control plane), nor a tainted node left without a controller by such an outage: a CCM that cannot renew
 * its lease stops leading, as a real one does, and the next takes the lease up to a lease duration after
 * the API is back (seed 1126: a 1.1 s interval right after a 1.7 s outage, with a 1 s lease).
 */
export function ofTheRuns(
  s: Scenario,
  at: { t0: number; runsFrom: number; leaseMs: number },
  v: Violation,
): boolean {
  if (Date.parse(v.start) < at.runsFrom) return false;
  const start = Date.parse(v.start) - at.t0;
  const end = Date.parse(v.end) - at.t0;
  const outages = s.faults.flatMap((f) =>
    f.kind === 'apiOutage' ? [{ from: f.after, to: f.after + f.duration }] : [],
  );
  if (v.kind === 'uninitialized-without-cloud-controller') {
    return !outages.some(
      (o) => start >= o.from && start < o.to + GRACE_MS && end <= o.to + at.leaseMs + GRACE_MS,
    );
  }
  if (v.kind !== 'api-unavailable') return true;
  // One control-plane node: its kube-apiserver restarts are outages of the migration's own making, and a
  // kube-apiserver that crash-loops, or a node that never returns, takes the API with it.
  if (s.controlPlanes === 1) return false;
  return !(
    outages.some((o) => start < o.to + GRACE_MS && end > o.from) ||
    s.faults.some((f) => f.kind === 'crashWithoutFlag' && f.component === 'kube-apiserver')
  );
}

export async function runScenario(s: Scenario): Promise<ScenarioResult> {
  const started = Date.now();
  const dir = await scratchDir('soak');
  const spec = await scenarioSpec(s);
  const t0 = Date.now();
  const twin = await startTwin({ spec, stateDir: path.join(dir, 'twin'), readyTimeoutMs: 30_000 });
  try {
    const clients = clientsFromKubeconfigFile(twin.kubeconfigPath);
    const storeDir = path.join(dir, 'runs');
    const store = new LocalRunStore(storeDir);
    const start = await hashNodeFiles(twin.stateDir);
    const taintedAtStart = taintedNodes(twin);
    const disruptions = startDisruptions(twin, clients, s, t0);
    const options = {
      ccmWorkload: s.ccmWorkload,
      // IBM's cluster, external from birth, names no provider preflight could detect.
      ...(s.provider === 'ibm' ? { provider: 'ibm' as const } : {}),
      ...(s.leaderMigration === undefined ? {} : { leaderMigration: s.leaderMigration }),
    };
    const base: MigrationRunOptions = {
      clients,
      store,
      clusterId: spec.name,
      maxUnavailable: s.maxUnavailable,
      options,
      waitMs: WAIT_MS,
      pollMs: POLL_MS,
      retryIntervalOverrides: RETRIES,
    };
    const cli = [
      ...['--cluster-id', spec.name, '--kubeconfig', twin.kubeconfigPath, '--state-dir', storeDir, '--yes'],
      ...['--max-unavailable', String(s.maxUnavailable), '--ccm-workload', s.ccmWorkload],
      ...(s.provider === 'ibm' ? ['--provider', 'ibm'] : []),
    ];
    const runsFrom = Date.now();
    const runs = await upgrade(s, base, cli);
    // The run the cluster is judged by: the first (resumed) one, unless it failed and the racing second
    // request, refused nothing, went on to migrate the cluster itself (seed 1110: the first refused in
    // preflight, the second installed the CCM).
    const first = runs.filter((r) => r.what !== 'second request').at(-1) as RunEnd;
    const second = runs.find((r) => r.what === 'second request');
    const last =
      first.status !== 'SUCCEEDED' && second?.exitCode === 0 ? { ...second, status: 'SUCCEEDED' } : first;
    if (last.status === 'SUCCEEDED' && s.downgrade) {
      runs.push(ended('downgrade', await runDowngradeLocally(base)));
    }
    disruptions.stop();
    await twin.monitor.stop();
    const end = await hashNodeFiles(twin.stateDir);
    const downgraded = runs.find((r) => r.what === 'downgrade');
    const outcome =
      last.status !== 'SUCCEEDED'
        ? last.error?.name === ERROR_NAMES.rolledBack
          ? 'rolledBack'
          : 'failed'
        : downgraded && downgraded.status !== 'SUCCEEDED'
          ? 'failed'
          : 'migrated';

    const record = await store
      .current(spec.name)
      .then(async (r) => r ?? (await store.list(spec.name)).at(-1));
    const asItWas =
      outcome === 'rolledBack' || downgraded?.status === 'SUCCEEDED' || AS_IT_WAS.has(last.exitCode ?? -1);
    // A node that never came back keeps its files until it does: its restore waits queued (workLeft).
    const waiting = restoresWaiting(twin, s);
    const filesLost = [
      ...filesMissing(start, end),
      ...(asItWas
        ? filesNotAsAtStart(start, end)
            .filter((f) => !waiting.some((node) => f.startsWith(`${node}/`)))
            .map((f) => `${f} (not as at start)`)
        : outcome === 'migrated' && record
          ? filesChangedOutsideRun(start, end, record).map((f) => `${f} (changed, not in the run's snapshot)`)
          : []),
    ];
    const unexpectedExitCodes = runs.flatMap((r): string[] => {
      if (r.error && !NAMED.has(r.error.name)) return [`${r.what}: unnamed failure ${r.error.name}`];
      // Refused while the first runs (7, or 4 while a restart keeps the API away); a run of its own once the
      // first has ended (0); never the first's run.
      if (r.what === 'second request' && (r.resumed || ![0, 4, 7].includes(r.exitCode ?? -1))) {
        return [
          `second request: exit ${r.exitCode}${r.resumed ? ', resumed the run still being driven' : ''}`,
        ];
      }
      return [];
    });
    if (outcome === 'migrated' && !downgraded) {
      const inTree = kubeletsNotRunning(twin, (p) => p === 'external');
      if (inTree.length > 0)
        unexpectedExitCodes.push(`exit 0 with kubelets not external: ${inTree.join(', ')}`);
    }
    return {
      seed: s.seed,
      outcome,
      ms: Date.now() - started,
      runs,
      violations: twin.monitor
        .violations()
        .filter((v) => ofTheRuns(s, { t0, runsFrom, leaseMs: spec.latencies.leaseDuration }, v))
        .map((v) => ({
          kind: v.kind,
          atMs: Date.parse(v.start) - t0,
          durationMs: v.durationMs,
          detail: v.detail,
        })),
      filesLost,
      objectsLeft: [...(asItWas ? ccmObjectsLeft(twin) : []), ...workLeft(twin, s, taintedAtStart)],
      unexpectedExitCodes,
      agentJobsDeleted: disruptions.deletedJobs(),
      scenario: s,
    };
  } finally {
    await twin.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
