/**
 * Hosts whose hostname is not their Node's name (AWS hosts `ip-10-0-0-12` whose Nodes have other names, a
 * --hostname-override): the CCM's leader election identity is `<hostname>_<uuid>`, so who leads is judged
 * from a Ready CCM pod and a Lease being renewed, never from a name prefix (issue 15, item 2).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkDrift } from '../../lib/drift/check.ts';
import { localContext } from '../../lib/local/context.ts';
import { loadTwinSpec, parseTwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

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
});
