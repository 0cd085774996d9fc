/**
 * Only our objects (issue 15, item 11): an upgrade does not take over a CCM object of the same name that
 * someone else made (unless told to adopt it), and the way back deletes only what carries
 * app.kubernetes.io/managed-by: ccm-migrate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

const CLUSTER_ROLE = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'system:cloud-controller-manager', labels: { team: 'platform' } },
  rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
};

const clusterRole = (e: E2E) =>
  e.t.objects.read({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: CLUSTER_ROLE.metadata.name },
  });

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('CCM objects someone else made', () => {
    it('are refused in preflight, naming them, with nothing changed', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      await e2e.t.objects.create(CLUSTER_ROLE as never);
      const files = await nodeFiles(e2e.t);
      const up = await e2e.upgrade();
      expect(up.error?.name).toBe('PreflightFailed');
      expect(up.error?.cause).toContain(
        'ClusterRole system:cloud-controller-manager already exist and were not created by ccm-migrate (no app.kubernetes.io/managed-by=ccm-migrate)',
      );
      expect(up.error?.cause).toContain('--adopt');
      expect(await nodeFiles(e2e.t)).toEqual(files);
      expect((await clusterRole(e2e)).metadata?.labels).toEqual({ team: 'platform' });
    });

    it('are taken over with adopt, and deleted on the way back', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      await e2e.t.objects.create(CLUSTER_ROLE as never);
      const up = await e2e.upgrade({ options: { adopt: true } });
      expect(up.error).toBeUndefined();
      expect((await clusterRole(e2e)).metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('ccm-migrate');
      expect((await e2e.downgrade()).status).toBe('SUCCEEDED');
      await expect(clusterRole(e2e)).rejects.toMatchObject({ code: 404 });
    });

    it('are left alone on the way back when they are no longer ours', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      // An operator takes the binding over: its label says so.
      const binding = {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'system:cloud-controller-manager' },
      };
      const live = await e2e.t.objects.read(binding);
      await e2e.t.objects.replace({ ...live, metadata: { ...live.metadata, labels: { team: 'platform' } } });
      const progress: string[] = [];
      const down = await e2e.downgrade({ onProgress: (p) => progress.push(p.message) });
      expect(down.status).toBe('SUCCEEDED');
      expect((await e2e.t.objects.read(binding)).metadata?.labels).toEqual({ team: 'platform' });
      expect(progress.join('\n')).toContain(
        'left alone, not created by ccm-migrate: ClusterRoleBinding system:cloud-controller-manager',
      );
    });
  });
});
