import { afterEach, describe, expect, it } from 'vitest';
import {
  type CloudHarness,
  kubeadmKcmCommand,
  lease,
  setPodReady,
  startHarness,
  until,
  writeCcm,
  writeKcm,
} from './cloud-harness.ts';

const LEASE_MS = 400;
let h: CloudHarness | undefined;

async function harness(): Promise<CloudHarness> {
  h = await startHarness((spec) => ({ ...spec, latencies: { ...spec.latencies, leaseDuration: LEASE_MS } }));
  return h;
}

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const external = (argv: string[]): string[] =>
  argv
    .filter((a) => !a.startsWith('--cloud-config'))
    .map((a) => (a.startsWith('--cloud-provider') ? '--cloud-provider=external' : a));

describe('leader election of the controller managers', () => {
  it('gives the kube-controller-manager lease to the in-tree KCM, which then runs the cloud loops and renews', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    const first = await until(() => lease(t.store, 'kube-controller-manager'), 'the KCM lease');
    expect(first.holderIdentity).toMatch(/^cp-1_[0-9a-f-]{36}$/);
    expect(first.leaseTransitions).toBe(0);
    expect(first.leaseDurationSeconds).toBe(1);
    expect(first.acquireTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(t.controllers.active()).toEqual([
      {
        kind: 'kube-controller-manager',
        pod: 'kube-controller-manager-cp-1',
        namespace: 'kube-system',
        node: 'cp-1',
        provider: 'aws',
        leaderMigration: false,
      },
    ]);
    const renewed = await until(() => {
      const l = lease(t.store, 'kube-controller-manager');
      return l?.renewTime !== first.renewTime && l;
    }, 'a renewal');
    expect(renewed.holderIdentity).toBe(first.holderIdentity);
    expect(renewed.acquireTime).toBe(first.acquireTime);
  });

  it('keeps a restarted leader’s lease until it expires, then another KCM takes it (no release on cancel)', async () => {
    const t = await harness();
    const argv = await kubeadmKcmCommand();
    writeKcm(t.store, 'cp-1', argv);
    const held = await until(() => lease(t.store, 'kube-controller-manager')?.holderIdentity, 'cp-1 to lead');
    writeKcm(t.store, 'cp-2', argv);
    setPodReady(t.store, 'kube-system', 'kube-controller-manager-cp-1', false);
    expect(t.controllers.active()).toEqual([]);
    // Two retry periods later the dead leader's lease still stands.
    await new Promise((resolve) => setTimeout(resolve, (LEASE_MS * 2 * 2) / 15 + 20));
    expect(lease(t.store, 'kube-controller-manager')?.holderIdentity).toBe(held);
    const taken = await until(() => {
      const l = lease(t.store, 'kube-controller-manager');
      return l?.holderIdentity !== held && l;
    }, 'cp-2 to take the expired lease');
    expect(taken.holderIdentity).toMatch(/^cp-2_/);
    expect(taken.leaseTransitions).toBe(1);
    expect(t.controllers.active().map((c) => c.node)).toEqual(['cp-2']);
  });

  it('comes back as a new process: a restarted single KCM waits for its own old lease to expire', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    const before = await until(
      () => lease(t.store, 'kube-controller-manager')?.holderIdentity,
      'cp-1 to lead',
    );
    setPodReady(t.store, 'kube-system', 'kube-controller-manager-cp-1', false);
    setPodReady(t.store, 'kube-system', 'kube-controller-manager-cp-1', true);
    expect(t.controllers.active()).toEqual([]);
    const after = await until(() => {
      const id = lease(t.store, 'kube-controller-manager')?.holderIdentity;
      return id !== before && id;
    }, 'the new process to lead');
    expect(after).toMatch(/^cp-1_/);
    expect(t.controllers.active().map((c) => c.pod)).toEqual(['kube-controller-manager-cp-1']);
  });

  it('lets a KCM without an in-tree provider lead without running cloud loops', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(external));
    await until(() => lease(t.store, 'kube-controller-manager')?.holderIdentity, 'the KCM lease');
    expect(t.controllers.active()).toEqual([]);
  });

  it('runs a CCM with --leader-elect=false without a lease, beside the leading CCM', async () => {
    const t = await harness();
    writeCcm(t.store, 'ccm-a', 'cp-1');
    writeCcm(t.store, 'ccm-b', 'cp-1', ['--leader-elect=false']);
    const holder = await until(
      () => lease(t.store, 'cloud-controller-manager')?.holderIdentity,
      'the CCM lease',
    );
    expect(holder).toMatch(/^cp-1_/);
    await until(() => t.controllers.active().length === 2, 'both CCMs active');
    expect(
      t.controllers
        .active()
        .map((c) => c.pod)
        .sort(),
    ).toEqual(['ccm-a', 'ccm-b']);
  });

  it('ignores CCMs for another provider and pods that are not Ready', async () => {
    const t = await harness();
    t.store.create('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'gce-ccm', namespace: 'kube-system' },
      spec: {
        nodeName: 'cp-1',
        containers: [
          {
            name: 'cloud-controller-manager',
            command: ['/cloud-controller-manager'],
            args: ['--cloud-provider', 'gce'],
          },
        ],
      },
    });
    setPodReady(t.store, 'kube-system', 'gce-ccm', true);
    writeCcm(t.store, 'aws-ccm', 'cp-1');
    setPodReady(t.store, 'kube-system', 'aws-ccm', false);
    await new Promise((resolve) => setTimeout(resolve, (LEASE_MS * 2) / 15 + 20));
    expect(lease(t.store, 'cloud-controller-manager')).toBeUndefined();
    expect(t.controllers.active()).toEqual([]);
  });

  it('hands the cloud loops over through the migration lease with --enable-leader-migration', async () => {
    const t = await harness();
    const migrating = (argv: string[]): string[] => [...argv, '--enable-leader-migration'];
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(migrating));
    const kcmHolder = await until(
      () => lease(t.store, 'cloud-provider-extraction-migration')?.holderIdentity,
      'the migration lease',
    );
    expect(kcmHolder).toBe(lease(t.store, 'kube-controller-manager')?.holderIdentity);
    writeCcm(t.store, 'ccm', 'cp-1', ['--enable-leader-migration']);
    await until(() => lease(t.store, 'cloud-controller-manager')?.holderIdentity, 'the CCM main lease');
    expect(t.controllers.active().map((c) => [c.kind, c.leaderMigration])).toEqual([
      ['kube-controller-manager', true],
    ]);

    // KCM restarts without its cloud provider: the CCM runs the loops once the migration lease expired.
    t.store.delete('pods', 'kube-system', 'kube-controller-manager-cp-1');
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand((argv) => migrating(external(argv))));
    const migrated = await until(() => {
      const l = lease(t.store, 'cloud-provider-extraction-migration');
      return l?.holderIdentity !== kcmHolder && l;
    }, 'the CCM to take the migration lease');
    expect(migrated.holderIdentity).toBe(lease(t.store, 'cloud-controller-manager')?.holderIdentity);
    expect(migrated.leaseTransitions).toBe(1);
    expect(t.controllers.active().map((c) => c.kind)).toEqual(['cloud-controller-manager']);
  });

  it('stops renewing while the API is down and gives up leading after the renew deadline', async () => {
    const t = await harness();
    writeCcm(t.store, 'ccm', 'cp-1');
    const held = await until(() => lease(t.store, 'cloud-controller-manager'), 'the CCM lease');
    setPodReady(t.store, 'kube-system', 'kube-apiserver-cp-1', false);
    const down = lease(t.store, 'cloud-controller-manager');
    await new Promise((resolve) => setTimeout(resolve, (LEASE_MS * 2) / 3 + 100));
    expect(lease(t.store, 'cloud-controller-manager')?.renewTime).toBe(down?.renewTime);
    setPodReady(t.store, 'kube-system', 'kube-apiserver-cp-1', true);
    // Past its renew deadline the process exited; as a new process it takes the expired lease again.
    const next = await until(() => {
      const l = lease(t.store, 'cloud-controller-manager');
      return l?.holderIdentity !== held.holderIdentity && l;
    }, 'a new leader identity');
    expect(next.holderIdentity).toMatch(/^cp-1_/);
    expect(next.leaseTransitions).toBe(1);
  });
});
