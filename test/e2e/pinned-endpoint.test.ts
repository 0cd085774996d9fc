/**
 * A kubeconfig that names one control-plane node (kubeadm's admin.conf, kubeone#2324): the twin's
 * kubeconfig-<node> reaches the API through that node alone, down while its kube-apiserver restarts. The
 * upgrade tells that its endpoint is that node, restarts it last, waits out its own outage and finishes;
 * the plan says so; the downgrade goes back the same way. Without that, the run fails on the node's restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renderPlan } from '../../lib/cli/plan.ts';
import { clientsFromKubeconfigFile, type KubeClients } from '../../lib/kube/clients.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { expectMigrated } from './expect-migrated.ts';
import { type E2E, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

/**
 * A kube-apiserver restart that outlasts the state machine's retries of an unreachable API in these tests
 * (6 × 20 ms): a real one takes tens of seconds, beyond what those retries cover in Lambda too.
 */
const RESTART_MS = 1000;

async function haSpec(): Promise<TwinSpec> {
  const base = await fixtureSpec(FIXTURES.awsHaMini);
  return fixtureSpec(FIXTURES.awsHaMini, {
    overrides: { latencies: { ...base.latencies, staticPodRestart: RESTART_MS } },
  });
}

/** The clients of `kubeconfig-<node>`: the API through that control-plane node alone. */
function throughNode(run: E2E, node: string): KubeClients {
  const file = run.t.twin.nodeKubeconfigPaths[node];
  if (!file) throw new Error(`the twin wrote no kubeconfig for ${node}`);
  return clientsFromKubeconfigFile(file);
}

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('ccm-migrate through a kubeconfig that names one control-plane node', () => {
    it('moves that node last, waits out its own restart, and finishes; the downgrade too', async () => {
      e2e = await startE2E(await haSpec(), server);
      const clients = throughNode(e2e, 'cp-1');
      const progress: string[] = [];
      const onProgress = (p: { step: string; node?: string; message: string }): void => {
        progress.push(`${p.step} ${p.node ?? ''} ${p.message}`);
      };

      const up = await e2e.upgrade({ clients, onProgress });
      expect(up.error).toBeUndefined();
      expect(up.status).toBe('SUCCEEDED');
      await expectMigrated(e2e);
      const moved = (step: string) =>
        progress.filter((p) => p.startsWith(step) && p.includes('rewritten')).map((p) => p.split(' ')[1]);
      expect(moved('move-control-plane-node')).toEqual(['cp-2', 'cp-3', 'cp-1']);
      expect(progress).toContainEqual(
        expect.stringMatching(/^preflight .*control-plane node cp-1 \(its InternalIP\).*cp-1 restarts last/),
      );
      expect(progress).toContainEqual(
        expect.stringMatching(
          /^move-control-plane-node cp-1 .*is this node: its kube-apiserver's restart is waited out/,
        ),
      );

      progress.length = 0;
      const down = await e2e.downgrade({ clients, onProgress });
      expect(down.error).toBeUndefined();
      expect(down.status).toBe('SUCCEEDED');
      const restored = progress
        .filter((p) => p.startsWith('restore-control-plane-node') && p.includes('restored'))
        .map((p) => p.split(' ')[1]);
      // Twice: back in-tree under leader migration (the handback), then leader migration off.
      expect(restored).toEqual(['cp-2', 'cp-3', 'cp-1', 'cp-2', 'cp-3', 'cp-1']);
      for (const node of ['cp-1', 'cp-2', 'cp-3', 'worker-1']) {
        expect(e2e.t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('aws');
      }
    });
  });
});

describe('ccm-migrate plan through a kubeconfig that names one control-plane node', () => {
  it('names the node, says it restarts last; through the twin’s own address it cannot tell', async () => {
    e2e = await startE2E(await haSpec());
    const pinned = await planUpgrade({ clients: throughNode(e2e, 'cp-2'), options: {}, pollMs: 10 });
    expect(pinned.examination.endpoint).toEqual({ node: 'cp-2', host: '10.0.0.12', by: 'InternalIP' });
    expect(pinned.examination.controlPlaneNodes).toEqual(['cp-1', 'cp-3', 'cp-2']);
    expect(renderPlan('aws-ha-mini', 'http://10.0.0.12:6443', pinned)).toContain(
      'the API endpoint 10.0.0.12 is control-plane node cp-2 (its InternalIP), not a load balancer: cp-2 restarts last',
    );

    const unpinned = await planUpgrade({ clients: e2e.t, options: {}, pollMs: 10 });
    expect(unpinned.examination.endpoint).toBeUndefined();
    expect(unpinned.examination.controlPlaneNodes).toEqual(['cp-1', 'cp-2', 'cp-3']);
    expect(renderPlan('aws-ha-mini', e2e.t.server, unpinned)).not.toContain('restarts last');
  });
});
