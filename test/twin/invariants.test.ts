import { afterEach, describe, expect, it } from 'vitest';
import { hasUninitializedTaint } from '../../lib/twin/cloud/nodes.ts';
import { type InvariantMonitor, startInvariantMonitor } from '../../lib/twin/invariants.ts';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import {
  type CloudHarness,
  kubeadmKcmCommand,
  lease,
  setPodReady,
  startHarness,
  until,
  writeCcm,
  writeKcm,
  writeNode,
  writePod,
} from './cloud-harness.ts';

let h: CloudHarness | undefined;
let monitor: InvariantMonitor | undefined;

afterEach(async () => {
  await monitor?.stop();
  await h?.stop();
  h = undefined;
  monitor = undefined;
});

async function harness(
  apiAvailable: () => boolean = () => true,
  faults: TwinSpec['faults'] = [],
): Promise<CloudHarness & { monitor: InvariantMonitor }> {
  h = await startHarness((spec) => ({
    ...spec,
    faults,
    latencies: { ...spec.latencies, leaseDuration: 300 },
  }));
  monitor = startInvariantMonitor({ ctx: h.ctx, controllers: h.controllers, apiAvailable, sampleMs: 5 });
  return { ...h, monitor };
}

const withoutCloud = (argv: string[]): string[] => argv.filter((a) => !a.startsWith('--cloud'));
const migrating = (argv: string[]): string[] => [...argv, '--enable-leader-migration'];
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the invariant monitor', () => {
  it('records a tainted node while no cloud controller runs, until a CCM initialises it', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(withoutCloud));
    writeNode(t.store, 'worker-1', { uninitialized: true });
    await pause(30);
    expect(t.monitor.violations()).toEqual([]);
    writeCcm(t.store, 'ccm', 'cp-1');
    const [violation] = await until(
      () => t.monitor.violations().length > 0 && t.monitor.violations(),
      'the interval to close',
    );
    expect(violation).toMatchObject({
      kind: 'uninitialized-without-cloud-controller',
      detail: { nodes: ['worker-1'], nodeCount: 1 },
    });
    expect(violation?.durationMs).toBeGreaterThanOrEqual(30);
    expect(Date.parse(violation?.end ?? '') - Date.parse(violation?.start ?? '')).toBe(violation?.durationMs);
    await t.monitor.stop();
    expect(await t.invariantLines()).toEqual([violation]);
  });

  it('records an in-tree KCM and a CCM running the cloud loops at once', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    writeCcm(t.store, 'ccm', 'cp-1');
    await until(() => t.controllers.active().length === 2, 'both controllers to lead');
    setPodReady(t.store, 'kube-system', 'ccm', false);
    const [violation] = await until(
      () => t.monitor.violations().length > 0 && t.monitor.violations(),
      'the interval to close',
    );
    expect(violation?.kind).toBe('two-cloud-controllers');
    const controllers = ((violation?.detail.controllers ?? []) as { kind: string; pod: string }[]).map(
      (c) => [c.kind, c.pod],
    );
    expect(controllers.sort()).toEqual([
      ['cloud-controller-manager', 'ccm'],
      ['kube-controller-manager', 'kube-controller-manager-cp-1'],
    ]);
    await t.monitor.stop();
    expect((await t.invariantLines()).map((l) => l.kind)).toEqual(['two-cloud-controllers']);
  });

  it('records a KCM and a CCM both running node IPAM, and not a CCM that leaves it to KCM', async () => {
    // Azure's CCM has a node-ipam controller; KCM's range allocator runs whether or not it is in-tree.
    h = await startHarness((spec) => ({
      ...spec,
      cloud: { ...spec.cloud, provider: 'azure' },
      latencies: { ...spec.latencies, leaseDuration: 300 },
    }));
    const t = h;
    monitor = startInvariantMonitor({
      ctx: t.ctx,
      controllers: t.controllers,
      apiAvailable: () => true,
      sampleMs: 5,
    });
    const ccm = (name: string, allocate: boolean) =>
      writePod(t.store, {
        name,
        node: 'cp-1',
        container: 'cloud-controller-manager',
        argv: [
          'cloud-controller-manager',
          '--cloud-provider=azure',
          `--allocate-node-cidrs=${allocate}`,
          '--cluster-cidr=192.168.0.0/16',
        ],
      });
    writeKcm(
      t.store,
      'cp-1',
      await kubeadmKcmCommand((argv) => [...withoutCloud(argv), '--cloud-provider=external']),
    );
    ccm('ccm-keeps-out', false);
    await until(
      () => t.controllers.nodeIpams().length === 1 && lease(t.store, 'cloud-controller-manager'),
      'both to lead',
    );
    await pause(30);
    expect(monitor.violations()).toEqual([]);
    t.store.delete('pods', 'kube-system', 'ccm-keeps-out');
    ccm('ccm-allocates', true);
    await until(() => t.controllers.nodeIpams().length === 2, 'the second node IPAM to lead');
    setPodReady(t.store, 'kube-system', 'ccm-allocates', false);
    const [violation] = await until(
      () => (monitor?.violations().length ?? 0) > 0 && monitor?.violations(),
      'the interval to close',
    );
    expect(violation?.kind).toBe('two-node-ipams');
    const pods = ((violation?.detail.controllers ?? []) as { pod: string }[]).map((c) => c.pod).sort();
    expect(pods).toEqual(['ccm-allocates', 'kube-controller-manager-cp-1']);
  });

  it('records API outages, but not the API coming up at start, and closes open intervals on stop', async () => {
    let up = false;
    const t = await harness(() => up);
    await pause(20);
    up = true;
    await pause(20);
    up = false;
    await pause(20);
    up = true;
    await until(() => t.monitor.violations().length === 1, 'the outage to be recorded');
    up = false;
    await pause(20);
    await t.monitor.stop();
    const lines = await t.invariantLines();
    expect(lines.map((l) => l.kind)).toEqual(['api-unavailable', 'api-unavailable']);
    for (const line of lines) {
      expect(line.durationMs).toBeGreaterThan(0);
      expect(line.detail).toEqual({});
    }
    expect(t.monitor.violations()).toEqual(lines);
  });

  it('records each Node deleted, by whatever deleted it, and writes it to invariants.jsonl', async () => {
    const t = await harness(undefined, [
      { kind: 'cloudLookupFails', node: 'worker-2', by: 'in-tree', error: 'notFound', after: 0 },
    ]);
    writeNode(t.store, 'worker-1');
    writeNode(t.store, 'worker-2', { ready: false });
    await pause(20);
    expect(t.monitor.violations()).toEqual([]);
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    const [deleted] = await until(
      () => t.monitor.violations().length > 0 && t.monitor.violations(),
      'the deletion to be recorded',
    );
    expect(deleted).toMatchObject({ kind: 'node-deleted', durationMs: 0, detail: { node: 'worker-2' } });
    await t.monitor.stop();
    expect(await t.invariantLines()).toEqual([deleted]);
  });

  it('records an injected outage window even when the API had not answered yet', async () => {
    const t = await harness(
      () => !h?.ctx.faults.apiOutageAt(),
      [{ kind: 'apiOutage', after: 0, duration: 60 }],
    );
    const [outage] = await until(
      () => t.monitor.violations().length > 0 && t.monitor.violations(),
      'the outage',
    );
    expect(outage?.kind).toBe('api-unavailable');
    expect(outage?.durationMs).toBeGreaterThan(0);
  });

  it('records two controllers that both use leader migration when both run the loops (one not electing)', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(migrating));
    writeCcm(t.store, 'ccm', 'cp-1', ['--enable-leader-migration', '--leader-elect=false']);
    await until(() => t.controllers.active().length === 2, 'both to run the loops');
    setPodReady(t.store, 'kube-system', 'ccm', false);
    const [violation] = await until(
      () => t.monitor.violations().length > 0 && t.monitor.violations(),
      'the interval to close',
    );
    expect(violation?.kind).toBe('two-cloud-controllers');
  });

  it('an external KCM that kept leader migration can hold the migration lease and run nothing', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand((argv) => migrating(withoutCloud(argv))));
    await until(() => lease(t.store, 'cloud-provider-extraction-migration'), 'the KCM to take the lease');
    writeCcm(t.store, 'ccm', 'cp-1', ['--enable-leader-migration']);
    await until(() => lease(t.store, 'cloud-controller-manager'), 'the CCM to hold its own lease');
    await pause(100);
    expect(t.controllers.active()).toEqual([]);
  });

  it('records nothing in a clean handover through leader migration', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(migrating));
    await until(() => t.controllers.active()[0]?.kind === 'kube-controller-manager', 'the KCM to lead');
    writeCcm(t.store, 'ccm', 'cp-1', ['--enable-leader-migration']);
    await until(() => lease(t.store, 'cloud-controller-manager'), 'the CCM to hold its own lease');
    t.store.delete('pods', 'kube-system', 'kube-controller-manager-cp-1');
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand((argv) => migrating(withoutCloud(argv))));
    await until(() => t.controllers.active()[0]?.kind === 'cloud-controller-manager', 'the CCM to take over');
    // Kubelets now register external: their nodes get initialised by the CCM.
    writeNode(t.store, 'worker-1', { uninitialized: true });
    await until(
      () => !hasUninitializedTaint(t.store.get('nodes', undefined, 'worker-1')),
      'worker-1 initialised',
    );
    await t.monitor.stop();
    expect(t.monitor.violations()).toEqual([]);
    expect(await t.invariantLines()).toEqual([]);
  });

  it('records nothing when the CCM starts only after the KCM dropped its provider (ADR 0002)', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    await until(() => t.controllers.active().length === 1, 'the KCM to lead');
    t.store.delete('pods', 'kube-system', 'kube-controller-manager-cp-1');
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(withoutCloud));
    writeCcm(t.store, 'ccm', 'cp-1');
    await until(() => t.controllers.active()[0]?.kind === 'cloud-controller-manager', 'the CCM to lead');
    await t.monitor.stop();
    expect(t.monitor.violations()).toEqual([]);
  });
});
