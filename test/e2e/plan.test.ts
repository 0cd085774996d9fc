/** `plan`: exactly what the upgrade would change, with no change, and nothing to change after an upgrade. */
import { afterEach, describe, expect, it } from 'vitest';
import { planUpgrade } from '../../lib/local/plan.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

describe('ccm-migrate plan on the AWS twin', () => {
  it('shows a diff per file and per object, changes nothing, and shows nothing once migrated', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const { t } = e2e;
    const before = await nodeFiles(t);
    const plan = await planUpgrade({ clients: t, options: {}, pollMs: 10 });

    expect(plan.files.map((f) => `${f.node}:${f.path}`).sort()).toEqual([
      'cp-1:/etc/kubernetes/manifests/kube-apiserver.yaml',
      'cp-1:/etc/kubernetes/manifests/kube-controller-manager.yaml',
      'cp-1:/var/lib/kubelet/kubeadm-flags.env',
      'worker-1:/var/lib/kubelet/kubeadm-flags.env',
      'worker-2:/var/lib/kubelet/kubeadm-flags.env',
    ]);
    const kcm = plan.files.find((f) => f.path.endsWith('kube-controller-manager.yaml'));
    expect(kcm?.diff).toContain('-    - --cloud-provider=aws');
    expect(kcm?.diff).toContain('+    - --cloud-provider=external');
    expect(plan.objects.every((o) => o.action === 'create')).toBe(true);
    expect(plan.leaderMigration).toEqual({
      enabled: false,
      reason: expect.stringMatching(/one control-plane node/),
    });
    expect(plan.objects.map((o) => o.object)).toContain(
      'Deployment kube-system/aws-cloud-controller-manager',
    );
    expect(await nodeFiles(t)).toEqual(before);
    await expect(
      t.apps.readNamespacedDeployment({ name: 'aws-cloud-controller-manager', namespace: 'kube-system' }),
    ).rejects.toThrow();

    expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
    const after = await planUpgrade({ clients: t, options: {}, pollMs: 10 });
    expect(after.files).toEqual([]);
    expect(after.examination.inTreeLeft).toEqual([]);
    expect(after.objects.map((o) => o.action)).toEqual(after.objects.map(() => 'unchanged'));
  });
});
