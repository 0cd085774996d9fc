/**
 * Node addresses predicted, not just compared: preflight predicts each node's addresses after the flip as
 * the CCM of its minor sets them (the Node's addresses now, the kubelet's --node-ip); plan shows every
 * change; verify takes an expected change, and rolls back on an address the prediction did not expect.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renderPlan } from '../../lib/cli/plan.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec, type TestTwin } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const EXTRA_ARGS = '/etc/default/kubelet';
const WORKERS = ['worker-1', 'worker-2'];

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

/** aws-mini whose workers have a second NIC (`inTree`: listed by the in-tree kubelet's provider too). */
async function twoNicSpec(inTree: boolean, extraArgs = 'KUBELET_EXTRA_ARGS=\n'): Promise<TwinSpec> {
  const spec = await fixtureSpec(FIXTURES.awsMini, {
    edits: [{ group: 'worker', file: EXTRA_ARGS, edit: () => extraArgs }],
  });
  return {
    ...spec,
    nodeGroups: spec.nodeGroups.map((g) => (g.name === 'worker' ? { ...g, secondNic: { inTree } } : g)),
  };
}

async function addresses(t: TestTwin, node: string): Promise<string[]> {
  const n = await t.core.readNode({ name: node });
  return (n.status?.addresses ?? []).map((a) => `${a.type} ${a.address}`).sort();
}

const ip = (t: TestTwin, node: string): string => t.twin.cloud.placement(node)?.ip ?? '';
const secondIp = (t: TestTwin, node: string): string => t.twin.cloud.placement(node)?.secondNicIp ?? '';

describe.each(apiServersUnderTest())('on the $name', (server) => {
  it('plans and takes the change --node-ip makes on a two-NIC node whose kubelet started without it', async () => {
    e2e = await startE2E(await twoNicSpec(true), server);
    const { t } = e2e;
    // Written after the kubelets started (config management pinning the node IP): they run without it
    // until the flip restarts them, and the CCM then keeps only that InternalIP.
    for (const node of WORKERS) {
      expect(await addresses(t, node)).toContain(`InternalIP ${secondIp(t, node)}`);
      await t.writeFile(node, EXTRA_ARGS, `KUBELET_EXTRA_ARGS=--node-ip=${ip(t, node)}\n`);
    }
    const plan = await planUpgrade({ clients: t, options: {}, pollMs: 10 });
    const text = renderPlan('aws-mini', t.server, plan);
    for (const node of WORKERS) expect(text).toContain(`${node}: - InternalIP ${secondIp(t, node)}`);
    expect(text).toContain('the addresses of 1 other node(s) unchanged');

    const up = await e2e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    // worker-1 was initialised again by the CCM (every node is): one InternalIP, the node IP.
    const again = await addresses(t, 'worker-1');
    expect(again).toContain(`InternalIP ${ip(t, 'worker-1')}`);
    expect(again).not.toContain(`InternalIP ${secondIp(t, 'worker-1')}`);
  });

  it('keeps one InternalIP through the flip when the kubelet has --node-ip and the CCM sees a second NIC', async () => {
    e2e = await startE2E(await twoNicSpec(false, 'KUBELET_EXTRA_ARGS=--node-ip={{nodeIP}}\n'), server);
    const { t } = e2e;
    const before = await addresses(t, 'worker-1');
    const plan = await planUpgrade({ clients: t, options: {}, pollMs: 10 });
    expect(renderPlan('aws-mini', t.server, plan)).toContain(
      'node addresses after the flip: unchanged on every node',
    );
    const up = await e2e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    expect(await addresses(t, 'worker-1')).toEqual(before);
  });

  it('rolls back when the CCM sets an address the prediction did not expect', async () => {
    // The in-tree kubelets never listed the second NIC; the CCM, reading the cloud's API, lists it.
    e2e = await startE2E(await twoNicSpec(false), server);
    const { t } = e2e;
    const start = await nodeFiles(t);
    const before = await addresses(t, 'worker-1');
    expect(before).not.toContain(`InternalIP ${secondIp(t, 'worker-1')}`);
    const up = await e2e.upgrade();
    expect(up.error?.name).toBe('RolledBack');
    expect(up.error?.cause).toContain(
      `worker-1 gained address InternalIP ${secondIp(t, 'worker-1')}, which the prediction did not expect`,
    );
    const hashes = (files: Map<string, string>) =>
      new Map([...files].filter(([f]) => start.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));
    expect(hashes(await nodeFiles(t))).toEqual(hashes(start));
  });

  it('refuses in preflight a node whose --node-ip the cloud does not list: the CCM would never initialise it', async () => {
    e2e = await startE2E(await twoNicSpec(true, 'KUBELET_EXTRA_ARGS=--node-ip=10.9.9.9\n'), server);
    const start = await nodeFiles(e2e.t);
    const up = await e2e.upgrade();
    expect(up.error?.name).toBe('PreflightFailed');
    expect(up.error?.cause).toMatch(/worker-1: its --node-ip 10\.9\.9\.9 is not among/);
    expect(await nodeFiles(e2e.t)).toEqual(start);
  });
});
