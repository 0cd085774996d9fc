/**
 * One soak scenario, drawn from its seed alone: the cluster (provider, topology, CCM workload, leader
 * migration), the faults the twin injects from its start, the bursts and disruptions the driver adds while
 * the run goes on, where the orchestrator is killed, whether a second request races the first, and whether
 * a downgrade follows.
 */
import * as z from 'zod';
import { FaultSchema, type Provider, ProviderSchema } from '../../lib/twin/spec.ts';
import { type Random, seededRandom } from './random.ts';

/** Request faults the driver turns on at `atMs` (from the twin's start) and off `forMs` later. */
export const BurstSchema = z.object({
  atMs: z.int().nonnegative(),
  forMs: z.int().positive(),
  fault: FaultSchema,
});
export type Burst = z.infer<typeof BurstSchema>;

export const ScenarioSchema = z.object({
  seed: z.int(),
  provider: ProviderSchema,
  controlPlanes: z.int().min(1).max(3),
  workers: z.int().min(1).max(20),
  ccmWorkload: z.enum(['deployment', 'daemonset']),
  /** Absent: the default (on with more than one control-plane node), all a killed CLI run can be given. */
  leaderMigration: z.boolean().optional(),
  maxUnavailable: z.int().min(1).max(3),
  /** Faults of the twin's spec: outages, a kube-apiserver that crash-loops, a node that never returns … */
  faults: z.array(FaultSchema),
  bursts: z.array(BurstSchema),
  /** When (from the twin's start) the driver deletes the agent Jobs it finds, as another client would. */
  agentJobDeletions: z.array(z.int().nonnegative()),
  /** The orchestrator is killed when the upgrade enters its n-th state, then started again. */
  killAtState: z.int().positive().optional(),
  /** A second upgrade of the same cluster starts while the first runs. */
  secondRequest: z.boolean(),
  downgrade: z.boolean(),
});
export type Scenario = z.infer<typeof ScenarioSchema>;

const RESOURCES = ['nodes', 'pods', 'jobs', 'deployments', 'daemonsets', 'configmaps', 'leases'] as const;
const VERBS = ['get', 'list', 'create', 'patch', 'update', 'delete'] as const;

function nodeName(r: Random, s: Pick<Scenario, 'controlPlanes' | 'workers'>): string {
  return r.chance(0.5) ? `cp-${r.int(1, s.controlPlanes)}` : `worker-${r.int(1, s.workers)}`;
}

function bursts(r: Random): Burst[] {
  const out: Burst[] = [];
  const count = r.int(0, 3);
  for (let i = 0; i < count; i++) {
    const scope = {
      ...(r.chance(0.5) ? { verb: r.pick(VERBS) } : {}),
      ...(r.chance(0.6) ? { resource: r.pick(RESOURCES) } : {}),
    };
    const fault = r.pick([
      { kind: 'error' as const, rate: r.int(5, 40) / 100, code: r.pick([429, 500, 503] as const), ...scope },
      { kind: 'reset' as const, rate: r.int(5, 30) / 100, ...scope },
      { kind: 'latency' as const, extra: r.int(20, 400), ...scope },
    ]);
    out.push({ atMs: r.int(0, 10_000), forMs: r.int(200, 4_000), fault });
  }
  return out;
}

function twinFaults(r: Random, s: Pick<Scenario, 'provider' | 'controlPlanes' | 'workers'>, quick: boolean) {
  const faults: z.input<typeof FaultSchema>[] = [];
  if (r.chance(0.25))
    faults.push({ kind: 'apiOutage', after: r.int(200, 8_000), duration: r.int(200, 3_000) });
  // IBM's kube-apiserver never had a --cloud-provider to lose.
  if (s.provider !== 'ibm' && r.chance(0.1)) {
    const node = `cp-${r.int(1, s.controlPlanes)}`;
    faults.push({ kind: 'crashWithoutFlag', node, component: 'kube-apiserver', flag: 'cloud-provider' });
  }
  // A node that never returns is waited for through every retry: the longest runs, left out of a quick slice.
  if (r.chance(0.1) && !quick) faults.push({ kind: 'nodeNeverReturns', node: nodeName(r, s) });
  if (r.chance(0.15)) {
    const error = r.pick(['notFound', 'unauthorized'] as const);
    faults.push({
      kind: 'cloudLookupFails',
      node: nodeName(r, s),
      by: 'external',
      error,
      after: r.int(0, 5_000),
      ...(error === 'unauthorized' || r.chance(0.5) ? { duration: r.int(500, 8_000) } : {}),
    });
  }
  return faults.map((f) => FaultSchema.parse(f));
}

const PROVIDERS: readonly Provider[] = ProviderSchema.options;

/**
 * The scenario of a seed. `quick` (the slice in `npm test`) draws from the same space with at most 3 workers
 * and no node that never returns, so that a run takes seconds: the same seed draws another scenario there.
 */
export function drawScenario(seed: number, opts: { quick?: boolean } = {}): Scenario {
  const quick = opts.quick ?? false;
  const r = seededRandom(seed);
  const provider = r.pick(PROVIDERS);
  const controlPlanes = r.int(1, 3);
  // Most clusters small, some up to 20 workers: the soak's time goes where the faults are.
  const workers = quick ? r.int(1, 3) : r.chance(0.8) ? r.int(1, 5) : r.int(6, 20);
  const base = { provider, controlPlanes, workers };
  const ccmWorkload = r.pick(['deployment', 'daemonset'] as const);
  const leaderMigration = r.chance(0.5);
  const maxUnavailable = r.int(1, 3);
  const faults = twinFaults(r, base, quick);
  const drawn = { bursts: bursts(r), deletions: r.chance(0.2) ? [r.int(500, 8_000)] : [] };
  // A killed run is the CLI's: a state among its first dozen (a run prints 10-14 of them).
  const killAtState = r.chance(0.3) ? r.int(1, 12) : undefined;
  return ScenarioSchema.parse({
    seed,
    ...base,
    ccmWorkload,
    ...(killAtState === undefined ? { leaderMigration } : { killAtState }),
    maxUnavailable,
    faults,
    bursts: drawn.bursts,
    agentJobDeletions: drawn.deletions,
    // The racing request races an in-process run (a killed run races its own resumption already).
    secondRequest: killAtState === undefined && r.chance(0.2),
    // IBM never had an in-tree provider: there is nothing to go back to.
    downgrade: provider !== 'ibm' && r.chance(0.5),
  });
}
