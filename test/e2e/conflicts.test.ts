/**
 * Writes that meet someone else's write (issue 15, item 8): the twin writes the object just before the
 * request reaches it (a concurrentWrite fault), so kubeadm-config's replace gets a real 409 and the node
 * check's guarded taint (a JSON patch) a failed test (422). The step reads again and writes again; only a conflict that
 * persists fails it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CONCURRENT_WRITE } from '../../lib/twin/api/front-door.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

const answered = (e: E2E, verb: string, resource: string, code: number): number =>
  e.t.twin.api
    .stats()
    .answers.filter((a) => a.verb === verb && a.resource === resource && a.code === code)
    .reduce((n, a) => n + a.count, 0);

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('an upgrade whose writes meet someone else’s', () => {
    it('writes again on the newer object, inside the step: no rollback, both changes kept', async () => {
      e2e = await startE2E(
        await fixtureSpec(FIXTURES.awsMini, {
          overrides: {
            faults: [
              { kind: 'concurrentWrite', rate: 1, times: 2, verb: 'update', resource: 'configmaps' },
              { kind: 'concurrentWrite', rate: 1, times: 2, verb: 'patch', resource: 'nodes' },
            ],
          },
        }),
        server,
      );
      const result = await e2e.upgrade();
      expect(result.error).toBeUndefined();
      expect(result.status).toBe('SUCCEEDED');
      expect(answered(e2e, 'update', 'configmaps', 409)).toBe(2);
      expect(answered(e2e, 'patch', 'nodes', 422)).toBeGreaterThan(0);
      const cm = await e2e.t.core.readNamespacedConfigMap({
        name: 'kubeadm-config',
        namespace: 'kube-system',
      });
      expect(cm.metadata?.annotations?.[CONCURRENT_WRITE]).toBeDefined();
      expect(cm.data?.ClusterConfiguration).not.toContain('cloud-provider: aws');
    });

    it('rolls back when the conflict persists, naming it', async () => {
      e2e = await startE2E(
        await fixtureSpec(FIXTURES.awsMini, {
          overrides: {
            faults: [{ kind: 'concurrentWrite', rate: 1, verb: 'update', resource: 'configmaps' }],
          },
        }),
        server,
      );
      const result = await e2e.upgrade();
      expect(result.error?.name).toBe('RolledBack');
      expect(result.error?.cause).toMatch(/kubeadm-config: HTTP 409/);
      expect(answered(e2e, 'update', 'configmaps', 409)).toBeGreaterThanOrEqual(5);
    });
  });
});
