/**
 * The way back on the twin: upgrade then downgrade returns every node file byte-identical and leaves
 * nothing of ccm-migrate in the cluster; a second downgrade changes nothing; versions without the in-tree
 * provider are refused. (Rollback of failed upgrades: rollback.test.ts.)
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { restoreProblems } from '../../lib/steps/downgrade-preflight.ts';
import { SnapshotSchema } from '../../lib/steps/snapshot.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { apiServersUnderTest, IN_PROCESS } from '../real-api.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, originalsOnly, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function clusterObjects(e: E2E): Promise<Record<string, unknown>> {
  const { t } = e;
  const names = <T extends { metadata?: { name?: string } }>(items: T[]) =>
    items.map((i) => i.metadata?.name).sort();
  return {
    serviceAccounts: names((await t.core.listNamespacedServiceAccount({ namespace: 'kube-system' })).items),
    configMaps: names((await t.core.listNamespacedConfigMap({ namespace: 'kube-system' })).items),
    deployments: names((await t.apps.listNamespacedDeployment({ namespace: 'kube-system' })).items),
    clusterRoles: names(
      (await t.objects.list('rbac.authorization.k8s.io/v1', 'ClusterRole')).items as {
        metadata?: { name?: string };
      }[],
    ),
    kubeadmConfig: (
      await t.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' })
    ).data,
    leases: names((await t.coordination.listNamespacedLease({ namespace: 'kube-system' })).items).filter(
      (n) => n === 'cloud-controller-manager',
    ),
  };
}

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('ccm-migrate downgrade on the AWS twin', () => {
    it('returns every node file byte-identical and the cluster’s objects to the start, with clean invariants', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsHaMini), server);
      const start = await nodeFiles(e2e.t);
      const objects = await clusterObjects(e2e);

      expect((await e2e.upgrade({ maxUnavailable: 2 })).status).toBe('SUCCEEDED');
      expect(await clusterObjects(e2e)).not.toEqual(objects);
      const down = await e2e.downgrade({ maxUnavailable: 2 });
      expect(down.error).toBeUndefined();
      expect(down.status).toBe('SUCCEEDED');

      expect(originalsOnly(await nodeFiles(e2e.t), start)).toEqual(originalsOnly(start, start));
      expect(await clusterObjects(e2e)).toEqual(objects);
      for (const node of ['cp-1', 'cp-2', 'cp-3', 'worker-1']) {
        expect(e2e.t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('aws');
      }
      await e2e.t.twin.monitor.stop();
      expect(e2e.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    });

    it('changes nothing when run again, and says the cluster is already in-tree', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      expect((await e2e.downgrade()).status).toBe('SUCCEEDED');
      const files = await nodeFiles(e2e.t);
      const again = await e2e.downgrade();
      expect(again.status).toBe('SUCCEEDED');
      expect((again.output as { preflight: { alreadyInTree: boolean } }).preflight.alreadyInTree).toBe(true);
      expect(await nodeFiles(e2e.t)).toEqual(files);
    });

    it('refuses a cluster with no upgrade run to undo', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      const none = await e2e.downgrade();
      expect(none.error?.name).toBe('PreflightFailed');
      expect(none.error?.cause).toMatch(/no finished upgrade of cluster aws-mini/);
    });
  });
});

// Decisions from the run store and the snapshot, refused or taken before the API server matters: the real server
// serves the full way back and its second run above.
describe.each([IN_PROCESS])('on the $name', (server) => {
  describe('ccm-migrate downgrade on the AWS twin', () => {
    it('goes back from the upgrade that changed something when the last upgrade found the cluster external', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      const start = await nodeFiles(e2e.t);
      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      const again = await e2e.upgrade();
      expect(again.status).toBe('SUCCEEDED');
      expect((again.output as { preflight: { alreadyExternal: boolean } }).preflight.alreadyExternal).toBe(
        true,
      );

      const down = await e2e.downgrade();
      expect(down.error).toBeUndefined();
      expect(down.status).toBe('SUCCEEDED');
      expect(originalsOnly(await nodeFiles(e2e.t), start)).toEqual(originalsOnly(start, start));
      for (const node of ['cp-1', 'worker-1', 'worker-2']) {
        expect(e2e.t.twin.nodes.kubelet(node).flags.get('cloud-provider'), node).toBe('aws');
      }
      const kcm = await e2e.t.readFile('cp-1', '/etc/kubernetes/manifests/kube-controller-manager.yaml');
      expect(kcm).toContain('--cloud-provider=aws');
      await e2e.t.twin.monitor.stop();
      expect(e2e.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    });

    it('refuses, before deleting anything, when the only upgrade it knows found the cluster external', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
      // Another run store (another laptop, a lost state dir) knows only a second, no-op upgrade.
      const elsewhere = new LocalRunStore(await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-e2e-store-')));
      expect((await e2e.upgrade({ store: elsewhere })).status).toBe('SUCCEEDED');
      const files = await nodeFiles(e2e.t);
      const objects = await clusterObjects(e2e);

      const down = await e2e.downgrade({ store: elsewhere });
      expect(down.error?.name).toBe('PreflightFailed');
      expect(down.error?.cause).toMatch(/no upgrade run of cluster aws-mini .*changed it/);
      expect(await nodeFiles(e2e.t)).toEqual(files);
      expect(await clusterObjects(e2e)).toEqual(objects);
    });

    it('refuses, before any change, a backup that is not the original its upgrade recorded', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      const up = await e2e.upgrade();
      expect(up.status).toBe('SUCCEEDED');
      const backup = `/etc/kubernetes/ccm-migrate-backup/${up.runId}/var/lib/kubelet/kubeadm-flags.env`;
      await e2e.t.writeFile('worker-2', backup, 'KUBELET_KUBEADM_ARGS="--cloud-provider=aws --v=9"\n');
      const files = await nodeFiles(e2e.t);
      const objects = await clusterObjects(e2e);

      const down = await e2e.downgrade();
      expect(down.error?.name).toBe('PreflightFailed');
      expect(down.error?.cause).toContain(
        `backups of run ${up.runId} are not the originals its snapshot recorded, so they cannot be put back: worker-2:/var/lib/kubelet/kubeadm-flags.env`,
      );
      expect(await nodeFiles(e2e.t)).toEqual(files);
      expect(await clusterObjects(e2e)).toEqual(objects);
    });

    it('knows the snapshot’s in-tree flags cannot start on a version without the provider', async () => {
      e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
      const up = await e2e.upgrade();
      const snapshot = SnapshotSchema.parse((await e2e.store.get(up.clusterId, up.runId))?.snapshot);
      expect(restoreProblems(snapshot, 'v1.26.15')).toEqual([]);
      const problems = restoreProblems(snapshot, 'v1.27.3');
      expect(problems).toContainEqual(
        expect.stringMatching(/^cp-1:\/etc\/kubernetes\/manifests\/kube-controller-manager\.yaml: .*aws/),
      );
      expect(problems).toContainEqual(
        expect.stringMatching(/^worker-2:\/var\/lib\/kubelet\/kubeadm-flags\.env: .*aws/),
      );
    });
  });
});
