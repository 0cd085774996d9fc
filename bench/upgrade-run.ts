/**
 * One upgrade of a fresh twin, run as `ccm-migrate upgrade` runs it (local engine, default wait and poll
 * intervals), and what it cost: makespan, the process's CPU, API requests by verb as the twin's API server
 * counted them, state transitions, and the snapshot preflight recorded (what the minimum request count is
 * computed from). The twin and the orchestrator share this process, so the CPU is both of theirs.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { clientsFromKubeconfigFile } from '../lib/kube/clients.ts';
import { type MigrationRunResult, runUpgradeLocally } from '../lib/local/migration.ts';
import { type Snapshot, SnapshotSchema } from '../lib/steps/snapshot.ts';
import { LocalRunStore } from '../lib/store/local-store.ts';
import type { TwinSpec } from '../lib/twin/spec.ts';
import { startTwin } from '../lib/twin/twin.ts';
import { exampleSpec, scratchDir, ZERO_LATENCIES } from './specs.ts';

export interface UpgradeMeasurement {
  readonly result: MigrationRunResult;
  readonly cpuSeconds: number;
  /** Requests per verb; `other` is everything not on a resource: /version and API discovery. */
  readonly requests: Readonly<Record<string, number>>;
  readonly snapshot: Snapshot;
}

export async function measureUpgrade(
  spec: TwinSpec,
  opts: { maxUnavailable: number; leaderMigration: boolean },
): Promise<UpgradeMeasurement> {
  const dir = await scratchDir('upgrade');
  const twin = await startTwin({ spec, stateDir: path.join(dir, 'twin') });
  try {
    const store = new LocalRunStore(path.join(dir, 'runs'));
    const before = twin.api.stats();
    const cpu = process.cpuUsage();
    const result = await runUpgradeLocally({
      clients: clientsFromKubeconfigFile(twin.kubeconfigPath),
      store,
      clusterId: spec.name,
      maxUnavailable: opts.maxUnavailable,
      options: { leaderMigration: opts.leaderMigration },
    });
    const used = process.cpuUsage(cpu);
    if (result.status !== 'SUCCEEDED') throw new Error(`upgrade ${result.status}: ${result.error?.cause}`);
    const after = twin.api.stats();
    const requests: Record<string, number> = {};
    for (const [verb, n] of Object.entries(after.byVerb)) {
      const delta = n - (before.byVerb[verb] ?? 0);
      if (delta > 0) requests[verb] = delta;
    }
    const onResources = Object.values(requests).reduce((a, b) => a + b, 0);
    requests.other = after.requests - before.requests - onResources;
    const record = await store.get(spec.name, result.runId);
    return {
      result,
      cpuSeconds: (used.user + used.system) / 1e6,
      requests,
      snapshot: SnapshotSchema.parse(record?.snapshot),
    };
  } finally {
    await twin.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * One small upgrade before any timed one: the ASL rendering (CDK construction, a few hundred ms, done once
 * per process like a deploy), the engine's definition check, the agent bundle and the JIT are then warm,
 * as they are for a deployed state machine, and no timed run pays for them.
 */
export async function warmUp(): Promise<void> {
  await measureUpgrade(await exampleSpec({ workers: 1, latencies: ZERO_LATENCIES }), {
    maxUnavailable: 1,
    leaderMigration: false,
  });
}
