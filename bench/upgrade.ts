/**
 * Upgrade benchmark: the makespan of a whole upgrade of the example AWS twin (3 control-plane nodes, 5
 * workers, its own latencies) run exactly as `ccm-migrate upgrade` runs it, against its lower bound, and
 * the API requests and state transitions it costs.
 *
 * Lower bound (issue 3): C control-plane static pod restarts in series + ⌈N / maxUnavailable⌉ kubelet
 * restarts + the CCM rollout (one pod start). Everything above it is the orchestration's overhead: agent
 * Jobs, polling, API round trips.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientsFromKubeconfigFile } from '../lib/kube/clients.ts';
import { type MigrationRunResult, runUpgradeLocally } from '../lib/local/migration.ts';
import { LocalRunStore } from '../lib/store/local-store.ts';
import { loadTwinSpec, nodeNames, type TwinSpec } from '../lib/twin/spec.ts';
import { startTwin } from '../lib/twin/twin.ts';
import type { BenchRow } from './report.ts';

const EXAMPLE = fileURLToPath(new URL('../assets/twins/aws-ha.yaml', import.meta.url));

export async function benchUpgrade(opts: { quick: boolean }): Promise<BenchRow[]> {
  const spec = await loadTwinSpec(EXAMPLE);
  const maxUnavailable = 2;
  const count = (role: string): number =>
    spec.nodeGroups.filter((g) => g.role === role).reduce((n, g) => n + nodeNames(g).length, 0);
  const [cp, workers] = [count('control-plane'), count('worker')];
  const l = spec.latencies;
  const bound =
    cp * l.staticPodRestart + Math.ceil((cp + workers) / maxUnavailable) * l.kubeletRestart + l.podStart;

  const plain = await timedUpgrade(spec, maxUnavailable, opts, false);
  const migrating = await timedUpgrade(spec, maxUnavailable, opts, true);
  const nodes = cp + workers;
  return [
    {
      name: `upgrade makespan, ${nodes} nodes, maxUnavailable ${maxUnavailable}`,
      value: plain.durationMs / 1000,
      unit: 's',
      note: `lower bound ${(bound / 1000).toFixed(1)} s; without leader migration`,
    },
    {
      name: 'upgrade makespan / lower bound',
      value: plain.durationMs / bound,
      unit: '×',
      target: 1.15,
      better: 'lower',
    },
    { name: 'upgrade API requests per migration', value: plain.apiRequests, unit: 'req' },
    { name: 'upgrade state transitions', value: plain.transitions, unit: '' },
    {
      name: 'upgrade makespan with leader migration',
      value: migrating.durationMs / 1000,
      unit: 's',
      note: `three lease handovers of up to leaseDuration (${l.leaseDuration / 1000} s) each`,
    },
  ];
}

/** One upgrade of a fresh twin of `spec`, with or without leader migration. */
async function timedUpgrade(
  spec: TwinSpec,
  maxUnavailable: number,
  opts: { quick: boolean },
  leaderMigration: boolean,
): Promise<MigrationRunResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-bench-upgrade-'));
  const twin = await startTwin({ spec, stateDir: path.join(dir, 'twin') });
  try {
    const result = await runUpgradeLocally({
      clients: clientsFromKubeconfigFile(twin.kubeconfigPath),
      store: new LocalRunStore(path.join(dir, 'runs')),
      clusterId: spec.name,
      maxUnavailable,
      options: { leaderMigration },
      pollMs: opts.quick ? 100 : 50,
    });
    if (result.status !== 'SUCCEEDED') throw new Error(`upgrade ${result.status}: ${result.error?.cause}`);
    return result;
  } finally {
    await twin.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
