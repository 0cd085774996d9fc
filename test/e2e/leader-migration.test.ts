/**
 * Leader migration end to end (issue 8): the upgrade of a three-control-plane twin with restart latencies
 * closer to a real cluster's, with and without leader migration, and what the cloud controllers did
 * meanwhile, sampled from the twin: which processes ran the cloud loops, and every window with none.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

const LEASE_MS = 1000;
/** Static pods restart in ~0.3 s, a CCM pod starts in 0.8 s (image pull), leases last 1 s. */
const REALISH = {
  staticPodRestart: 300,
  kubeletRestart: 100,
  podStart: 800,
  nodeInit: 20,
  fileCheck: 20,
  jobStart: 10,
  apiRequest: 0,
  leaseDuration: LEASE_MS,
};

interface Observed {
  readonly status: string;
  /** Windows in which no process ran the cloud loops, in ms. */
  readonly noController: number[];
  readonly maxActive: number;
  readonly violations: string[];
}

async function observedUpgrade(leaderMigration?: boolean): Promise<Observed> {
  const spec = await fixtureSpec(FIXTURES.awsHaMini, { overrides: { latencies: REALISH } });
  e2e = await startE2E(spec);
  const { controllers, monitor } = e2e.t.twin;
  const noController: number[] = [];
  let since: number | undefined;
  let maxActive = 0;
  const sample = (): void => {
    const active = controllers.active().length;
    maxActive = Math.max(maxActive, active);
    if (active === 0) since ??= Date.now();
    else if (since !== undefined) {
      noController.push(Date.now() - since);
      since = undefined;
    }
  };
  const timer = setInterval(sample, 5);
  const result = await e2e.upgrade(leaderMigration === undefined ? {} : { options: { leaderMigration } });
  clearInterval(timer);
  sample();
  if (since !== undefined) noController.push(Date.now() - since);
  await monitor.stop();
  const violations = monitor.violations().filter((v) => v.kind !== 'api-unavailable');
  return { status: result.status, noController, maxActive, violations: violations.map((v) => v.kind) };
}

describe('the upgrade of an HA control plane with leader migration', () => {
  it('hands the cloud controllers over: never two, gaps only while a lease expires, flags gone at the end', async () => {
    const run = await observedUpgrade();
    expect(run.status).toBe('SUCCEEDED');
    expect(run.violations).toEqual([]);
    expect(run.maxActive).toBe(1);
    // A restarted holder leaves its lease to expire (no ReleaseOnCancel): that, plus one retry period, is all.
    for (const gap of run.noController) expect(gap).toBeLessThan(LEASE_MS + 500);

    const { t } = e2e as E2E;
    for (const node of ['cp-1', 'cp-2', 'cp-3']) {
      const kcm = await t.readFile(node, '/etc/kubernetes/manifests/kube-controller-manager.yaml');
      expect(kcm, node).toContain('--cloud-provider=external');
      expect(kcm, node).not.toContain('leader-migration');
    }
    const ccm = await t.apps.readNamespacedDeployment({
      name: 'aws-cloud-controller-manager',
      namespace: 'kube-system',
    });
    expect(JSON.stringify(ccm.spec?.template.spec?.containers)).not.toContain('leader-migration');
    const migrationLease = await t.coordination.readNamespacedLease({
      name: 'cloud-provider-extraction-migration',
      namespace: 'kube-system',
    });
    // Taken first by a kube-controller-manager, then by the CCM: handed over at least once.
    expect(migrationLease.spec?.leaseTransitions ?? 0).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('without it, no controller runs the cloud loops from the last in-tree KCM until the CCM leads', async () => {
    const run = await observedUpgrade(false);
    expect(run.status).toBe('SUCCEEDED');
    expect(run.maxActive).toBe(1);
    // The lease expiry plus the CCM's start (0.8 s here; an image pull and more on a real cluster).
    expect(Math.max(...run.noController)).toBeGreaterThan(LEASE_MS + 500);
  }, 60_000);
});
