/**
 * The twins the benchmarks run on: the example AWS HA cluster (assets/twins/aws-ha.yaml: 3 control-plane
 * nodes, its demo latencies, the short profile) with its worker group resized and, where asked, its
 * latencies replaced (the realistic profile, time-compressed); and the lower bound of a migration's
 * makespan, computed from a spec's own latencies.
 */
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makespanLowerBoundMs as lowerBoundMs } from '../lib/report/makespan-bound.ts';
import {
  LATENCY_PROFILES,
  type Latencies,
  loadTwinSpec,
  nodeNames,
  parseTwinSpec,
  type TwinSpec,
} from '../lib/twin/spec.ts';

const EXAMPLE = fileURLToPath(new URL('../assets/twins/aws-ha.yaml', import.meta.url));

/**
 * Every latency the upgrade waits on at zero: what is left of a run is the orchestration itself. fileCheck
 * 0 is the schema's minimum (the twin's kubelets floor it at their own minimum period); leaseDuration is
 * kept, as only leader migration waits on it.
 */
export const ZERO_LATENCIES: Partial<Latencies> = {
  staticPodRestart: 0,
  kubeletRestart: 0,
  podStart: 0,
  nodeInit: 0,
  jobStart: 0,
  fileCheck: 0,
  apiRequest: 0,
};

/** The example spec with `workers` worker nodes (its own count when absent) and some latencies replaced. */
export async function exampleSpec(
  opts: { workers?: number; latencies?: Partial<Latencies> } = {},
): Promise<TwinSpec> {
  const example = await loadTwinSpec(EXAMPLE);
  const { workers, latencies } = opts;
  return parseTwinSpec({
    ...example,
    nodeGroups: example.nodeGroups.map((g) =>
      g.role === 'worker' && workers !== undefined ? { ...g, count: workers } : g,
    ),
    latencies: { ...example.latencies, ...latencies },
  });
}

/**
 * How much faster than a real cluster the bench runs the realistic profile: every latency of a real
 * cluster's divided by this, so that a 3 + 50 upgrade takes tens of seconds instead of minutes. The bound is
 * computed from the same divided latencies, so makespan / bound compares like with like; what does not
 * shrink is the orchestration's own time (CPU, API round trips, poll intervals), which therefore weighs
 * this many times more in the ratio than on a real cluster: the measured ratio is an upper bound of the
 * real one. apiRequest (0) stays as it is.
 */
export const REALISTIC_TIME_SCALE = 10;

/** The realistic profile's figures, divided by REALISTIC_TIME_SCALE. */
export function realisticLatencies(): Partial<Latencies> {
  const { apiRequest: _, ...scaled } = LATENCY_PROFILES.realistic;
  return {
    ...LATENCY_PROFILES.realistic,
    ...Object.fromEntries(
      Object.entries(scaled).map(([name, ms]) => [name, Math.round(ms / REALISTIC_TIME_SCALE)]),
    ),
    profile: 'realistic',
  };
}

/** The example spec grown to `nodes` nodes in all, with no start-up latencies (a twin to list and check). */
export function bigSpec(nodes: number): Promise<TwinSpec> {
  return exampleSpec({
    workers: nodes - 3,
    latencies: { staticPodRestart: 0, podStart: 0, kubeletRestart: 0, nodeInit: 0 },
  });
}

export function nodeCount(spec: TwinSpec, role?: 'control-plane' | 'worker'): number {
  return spec.nodeGroups
    .filter((g) => role === undefined || g.role === role)
    .reduce((n, g) => n + nodeNames(g).length, 0);
}

/** The lower bound of a migration's makespan (lib/report/makespan-bound.ts) on a twin of `spec`. */
export function makespanLowerBoundMs(
  spec: TwinSpec,
  maxUnavailable: number,
  kind: 'upgrade' | 'downgrade' = 'upgrade',
): number {
  return lowerBoundMs(
    { controlPlaneNodes: nodeCount(spec, 'control-plane'), nodes: nodeCount(spec), maxUnavailable },
    spec.latencies,
    kind,
  );
}

/**
 * Where twins keep their node files and runs their store: tmpfs where there is one, so that a figure
 * measures the code and not a disk shared with whatever else the machine runs (a 5,000-node twin writes
 * 25,000 files).
 */
export const SCRATCH_BASE = existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

export function scratchDir(name: string): Promise<string> {
  return mkdtemp(path.join(SCRATCH_BASE, `ccm-migrate-bench-${name}-`));
}
