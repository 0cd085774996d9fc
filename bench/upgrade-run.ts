/**
 * One upgrade of a fresh twin, and where asked the downgrade of the same twin after it, each run as
 * `ccm-migrate upgrade|downgrade` runs it (local engine, default wait and poll intervals), and what each
 * cost: makespan, where it went (the top-level states' spans), the process's CPU, API requests by verb as
 * the twin's API server counted them, state transitions, and the snapshot preflight recorded (what the
 * minimum request count is computed from). The twin runs in a process of its own (bench/twin-process.ts):
 * the orchestrator's CPU is this process's, the twin's is the child's.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { clientsFromKubeconfigFile } from '../lib/kube/clients.ts';
import type { EventLog } from '../lib/local/engine.ts';
import {
  type MigrationRunOptions,
  type MigrationRunResult,
  runDowngradeLocally,
  runUpgradeLocally,
} from '../lib/local/migration.ts';
import { type Snapshot, SnapshotSchema } from '../lib/steps/snapshot.ts';
import { LocalRunStore } from '../lib/store/local-store.ts';
import type { TwinSpec } from '../lib/twin/spec.ts';
import { exampleSpec, scratchDir, ZERO_LATENCIES } from './specs.ts';
import { startTwinProcess, type TwinProcess } from './twin-process.ts';

/** A top-level state of the run: when it began (ms after the run's start) and how long it took. */
export interface Span {
  readonly state: string;
  readonly startMs: number;
  readonly ms: number;
}

export interface RunMeasurement {
  readonly result: MigrationRunResult;
  /** The orchestrator's CPU over the run (this process). */
  readonly cpuSeconds: number;
  /** The twin's CPU over the run (its own process). */
  readonly twinCpuSeconds: number;
  /** Requests per verb; `other` is everything not on a resource: /version and API discovery. */
  readonly requests: Readonly<Record<string, number>>;
  readonly spans: readonly Span[];
}

export interface UpgradeMeasurement extends RunMeasurement {
  readonly snapshot: Snapshot;
  /** The downgrade that followed it on the same twin, when asked for. */
  readonly downgrade?: RunMeasurement;
}

/** The spans of the states outside any Map iteration, from the engine's events. */
function spanRecorder(): { onEvent: (e: EventLog) => void; spans: Span[] } {
  const spans: Span[] = [];
  const entered = new Map<string, number>();
  let t0 = 0;
  return {
    spans,
    onEvent: (e) => {
      if (e.type === 'ExecutionStarted') t0 = e.timestamp;
      if (e.type !== 'StateEntered' && e.type !== 'StateExited') return;
      if (e.index !== undefined) return;
      if (e.type === 'StateEntered') entered.set(e.state.name, e.timestamp);
      const since = entered.get(e.state.name);
      if (e.type === 'StateExited' && since !== undefined)
        spans.push({ state: e.state.name, startMs: since - t0, ms: e.timestamp - since });
    },
  };
}

async function measureRun(
  twin: TwinProcess,
  run: (opts: MigrationRunOptions) => Promise<MigrationRunResult>,
  opts: Omit<MigrationRunOptions, 'clients' | 'onEvent'>,
): Promise<RunMeasurement> {
  const recorder = spanRecorder();
  const before = await twin.stats();
  const twinCpu = await twin.cpuSeconds();
  const cpu = process.cpuUsage();
  const result = await run({
    ...opts,
    clients: clientsFromKubeconfigFile(twin.kubeconfigPath),
    onEvent: recorder.onEvent,
  });
  const used = process.cpuUsage(cpu);
  const twinCpuSeconds = (await twin.cpuSeconds()) - twinCpu;
  if (result.status !== 'SUCCEEDED') throw new Error(`run ${result.status}: ${result.error?.cause}`);
  const after = await twin.stats();
  const requests: Record<string, number> = {};
  for (const [verb, n] of Object.entries(after.byVerb)) {
    const delta = n - (before.byVerb[verb] ?? 0);
    if (delta > 0) requests[verb] = delta;
  }
  const onResources = Object.values(requests).reduce((a, b) => a + b, 0);
  requests.other = after.requests - before.requests - onResources;
  return {
    result,
    cpuSeconds: (used.user + used.system) / 1e6,
    twinCpuSeconds,
    requests,
    spans: recorder.spans,
  };
}

export async function measureUpgrade(
  spec: TwinSpec,
  opts: { maxUnavailable: number; leaderMigration: boolean; downgrade?: boolean },
): Promise<UpgradeMeasurement> {
  const dir = await scratchDir('upgrade');
  const twin = await startTwinProcess(spec, path.join(dir, 'twin'));
  try {
    const store = new LocalRunStore(path.join(dir, 'runs'));
    const common = {
      store,
      clusterId: spec.name,
      maxUnavailable: opts.maxUnavailable,
      options: { leaderMigration: opts.leaderMigration },
    };
    const upgrade = await measureRun(twin, runUpgradeLocally, common);
    const record = await store.get(spec.name, upgrade.result.runId);
    const snapshot = SnapshotSchema.parse(record?.snapshot);
    if (!opts.downgrade) return { ...upgrade, snapshot };
    return { ...upgrade, snapshot, downgrade: await measureRun(twin, runDowngradeLocally, common) };
  } finally {
    await twin.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * One small upgrade and downgrade before any timed one: the ASL rendering (CDK construction, a few hundred
 * ms, done once per process like a deploy), the engine's definition check, the agent bundle and the JIT are
 * then warm, as they are for a deployed state machine, and no timed run pays for them.
 */
export async function warmUp(): Promise<void> {
  await measureUpgrade(await exampleSpec({ workers: 1, latencies: ZERO_LATENCIES }), {
    maxUnavailable: 1,
    leaderMigration: false,
    downgrade: true,
  });
}
