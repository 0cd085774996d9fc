/**
 * Hosts whose hostname is not their Node's name (AWS hosts `ip-10-0-0-12` whose Nodes the in-tree provider
 * named after their instances): the CCM's leader election identity is `<hostname>_<uuid>`, so who leads is
 * judged from a Ready CCM pod and a Lease being renewed, never from a name prefix (issue 15, item 2); and
 * a kubelet off the in-tree provider names itself after its host unless --hostname-override pins its Node
 * (item 3).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renderPlan } from '../../lib/cli/plan.ts';
import { checkDrift } from '../../lib/drift/check.ts';
import { localContext } from '../../lib/local/context.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import { loadTwinSpec, parseTwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, KUBELET_FLAGS } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, originalsOnly, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function hostnamedSpec(fixture: string) {
  const spec = await loadTwinSpec(fixture);
  return parseTwinSpec(
    { ...spec, nodeGroups: spec.nodeGroups.map((g) => ({ ...g, hostname: 'ip-{ip-dashed}' })) },
    fixture,
  );
}

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('hosts whose hostname is not their Node name', () => {
    it.each([
      ['a single control plane', FIXTURES.awsMini],
      ['a replicated one, under leader migration', FIXTURES.awsHaMini],
    ])('are upgraded with %s, and a drift check finds the CCM leading', async (_what, fixture) => {
      e2e = await startE2E(await hostnamedSpec(fixture), server);
      const lease = async () =>
        (
          await e2e?.t.coordination.readNamespacedLease({
            name: 'cloud-controller-manager',
            namespace: 'kube-system',
          })
        )?.spec?.holderIdentity;
      const result = await e2e.upgrade();
      expect(result.error).toBeUndefined();
      expect(result.status).toBe('SUCCEEDED');
      expect(await lease()).toMatch(/^ip-10-0-0-\d+_/);
      const drift = await checkDrift(localContext({ clients: e2e.t, pollMs: 10 }), {
        clusterId: e2e.t.twin.spec.name,
        provider: 'aws',
        expect: 'external',
        deep: false,
        stuckAfterMs: 0,
      });
      expect(drift.findings).toEqual([]);
      await e2e.t.twin.monitor.stop();
      expect(e2e.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    });
  });

  describe('kubelets keep their Node names', () => {
    it('upgrade, upgrade again, downgrade: no other Node registers, and every file is back byte for byte', async () => {
      e2e = await startE2E(await hostnamedSpec(FIXTURES.awsMini), server);
      const { t } = e2e;
      const nodes = ['cp-1', 'worker-1', 'worker-2'];
      const nodeNames = async () => (await t.core.listNode()).items.map((n) => n.metadata?.name).sort();
      const start = await nodeFiles(t);
      expect(await nodeNames()).toEqual(nodes);

      const out = renderPlan(
        'aws-mini',
        t.server,
        await planUpgrade({ clients: t, options: {}, pollMs: 10 }),
      );
      expect(out).toContain('--hostname-override keeps the Node name of 3 kubelet(s)');
      for (const node of ['cp-1', 'worker-1', 'worker-2'])
        expect(out).toContain(`--hostname-override=${node}`);

      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      for (const node of nodes) {
        expect(await t.readFile(node, KUBELET_FLAGS), node).toContain(`--hostname-override=${node}`);
        expect(t.twin.nodes.kubelet(node)).toMatchObject({ ready: true, registeredAs: node });
      }
      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      const down = await e2e.downgrade();
      expect(down.error).toBeUndefined();
      expect(down.status).toBe('SUCCEEDED');

      expect(await nodeNames()).toEqual(nodes);
      expect(originalsOnly(await nodeFiles(t), start)).toEqual(originalsOnly(start, start));
      for (const node of nodes) {
        expect(t.twin.nodes.kubelet(node), node).toMatchObject({ ready: true, registeredAs: node });
        expect(t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('aws');
      }
      await t.twin.monitor.stop();
      expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    });
  });
});
