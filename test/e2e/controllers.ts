/**
 * What the cloud controllers do during a run on the three-control-plane twin with restart latencies closer
 * to a real cluster's: which processes run the cloud loops, sampled every 5 ms, and every window with none.
 * Shared by the leader-migration tests of the upgrade, the downgrade and the upgrade's rollback.
 */
import type { TwinSpec } from '../../lib/twin/spec.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import type { E2E } from './harness.ts';

export const LEASE_MS = 1000;

/** Static pods restart in ~0.3 s, a CCM pod starts in 0.8 s (image pull), leases last 1 s. */
export const REALISH = {
  staticPodRestart: 300,
  kubeletRestart: 100,
  podStart: 800,
  nodeInit: 20,
  fileCheck: 20,
  jobStart: 10,
  apiRequest: 0,
  leaseDuration: LEASE_MS,
};

/**
 * The longest window with no cloud controller a handover may open: a lease's expiry, or a new CCM pod's start
 * when a rollout replaces the leader (strategy Recreate: the old pods stop before the new start), plus slack
 * for a loaded machine (CI, the suite beside it: 2.0 s seen once).
 */
export const HANDOVER_GAP_MS = LEASE_MS + REALISH.podStart + 500;

/** The three-control-plane twin with those latencies. */
export function realishHaSpec(): Promise<TwinSpec> {
  return fixtureSpec(FIXTURES.awsHaMini, { overrides: { latencies: REALISH } });
}

/** A window in which no process ran the cloud loops. */
export interface NoController {
  /** When it began (ms since the epoch) and how long it lasted. */
  readonly since: number;
  readonly ms: number;
  /** Whether some kube-controller-managers were in-tree and some external meanwhile (the control plane half-way). */
  readonly midway: boolean;
}

export interface Observed<T> {
  readonly result: T;
  readonly noController: NoController[];
  /** The most processes running the cloud loops at once. */
  readonly maxActive: number;
  /** The twin monitor's violations (but API unavailability, which a restart of kube-apiserver causes). */
  readonly violations: string[];
}

/** Sample which processes run the cloud loops every 5 ms while `run` runs. */
export async function observeControllers<T>(e2e: E2E, run: () => Promise<T>): Promise<Observed<T>> {
  const { controllers, store, monitor } = e2e.t.twin;
  const noController: NoController[] = [];
  let open: { since: number; midway: boolean } | undefined;
  let maxActive = 0;
  const midway = (): boolean => {
    const external = ['cp-1', 'cp-2', 'cp-3'].map((node) =>
      JSON.stringify(
        store.tryGet('pods', 'kube-system', `kube-controller-manager-${node}`)?.spec ?? '',
      ).includes('--cloud-provider=external'),
    );
    return external.includes(true) && external.includes(false);
  };
  const close = (): void => {
    if (open) noController.push({ ...open, ms: Date.now() - open.since });
    open = undefined;
  };
  const sample = (): void => {
    const active = controllers.active().length;
    maxActive = Math.max(maxActive, active);
    if (active > 0) close();
    else {
      open ??= { since: Date.now(), midway: false };
      open.midway ||= midway();
    }
  };
  const timer = setInterval(sample, 5);
  let result: T;
  try {
    result = await run();
  } finally {
    clearInterval(timer);
  }
  sample();
  close();
  const violations = monitor
    .violations()
    .filter((v) => v.kind !== 'api-unavailable')
    .map((v) => v.kind);
  return { result, noController, maxActive, violations };
}
