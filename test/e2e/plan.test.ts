/** `plan`: exactly what the upgrade would change, with no change, and nothing to change after an upgrade. */
import { fileURLToPath } from 'node:url';
import type { V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type ObjectChange, planUpgrade } from '../../lib/local/plan.ts';
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

    // Every node has ecr-credential-provider: each kubelet is pointed at the plugin config written beside.
    const CREDENTIALS = '/etc/kubernetes/image-credential-provider-config.yaml';
    expect(plan.files.map((f) => `${f.node}:${f.path}`).sort()).toEqual([
      `cp-1:${CREDENTIALS}`,
      'cp-1:/etc/kubernetes/manifests/kube-apiserver.yaml',
      'cp-1:/etc/kubernetes/manifests/kube-controller-manager.yaml',
      'cp-1:/var/lib/kubelet/kubeadm-flags.env',
      `worker-1:${CREDENTIALS}`,
      'worker-1:/var/lib/kubelet/kubeadm-flags.env',
      `worker-2:${CREDENTIALS}`,
      'worker-2:/var/lib/kubelet/kubeadm-flags.env',
    ]);
    expect(plan.files.find((f) => f.path === CREDENTIALS)?.diff).toContain('naming ecr-credential-provider');
    const kcm = plan.files.find((f) => f.path.endsWith('kube-controller-manager.yaml'));
    expect(kcm?.diff).toContain('-    - --cloud-provider=aws');
    expect(kcm?.diff).toContain('+    - --cloud-provider=external');
    expect(plan.objects.every((o) => o.action === 'create')).toBe(true);
    expect(plan.action).toMatch(/without its cloud-node-lifecycle controller .* every node again, 3 in all$/);
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
    // No agent pre-started: its ServiceAccount would be an identity plan created.
    const accounts = await t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
    expect(accounts.items.map((a) => a.metadata?.name)).not.toContain('ccm-migrate-agent');

    expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
    const after = await planUpgrade({ clients: t, options: {}, pollMs: 10 });
    expect(after.files).toEqual([]);
    expect(after.examination.inTreeLeft).toEqual([]);
    expect(after.objects.map((o) => o.action)).toEqual(after.objects.map(() => 'unchanged'));
  });
});

const SECRET_MINI = fileURLToPath(new URL('../fixtures/twins/openstack-secret-mini.yaml', import.meta.url));
const CCM = 'Deployment kube-system/openstack-cloud-controller-manager';
const COPY = '/etc/kubernetes/cloud.conf.external';
/** Values of the fixture's Secret and cloud.conf that must stay where they are. */
const SECRETS = ['fake-not-a-real-secret', 'keystone.ccm-twin.example'];

/** The object a `create` change shows: its diff is every line of it, added. */
function created(change: ObjectChange | undefined): V1Deployment {
  expect(change?.action).toBe('create');
  const added = (change?.diff ?? '').split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'));
  return parse(added.map((l) => l.slice(1)).join('\n')) as V1Deployment;
}

/** What decides what the CCM reads: its arguments, mounts and volumes. */
function cloudConfigOf(pod: V1PodSpec | undefined) {
  const ccm = pod?.containers.find((c) => c.name === 'cloud-controller-manager');
  return { args: ccm?.args, volumeMounts: ccm?.volumeMounts, volumes: pod?.volumes };
}

describe('ccm-migrate plan on OpenStack whose cloud.conf names its credentials Secret', () => {
  it('shows the CCM the upgrade applies: the translated copy and the Secret, and writes no copy', async () => {
    e2e = await startE2E(await fixtureSpec(SECRET_MINI));
    const { t } = e2e;
    const before = await nodeFiles(t);
    const plan = await planUpgrade({ clients: t, options: {}, pollMs: 10 });

    expect(plan.examination.cloudConfigTranslation).toEqual({
      source: '/etc/kubernetes/cloud.conf',
      target: COPY,
      credentialsSecret: { name: 'openstack-credentials', namespace: 'kube-system' },
    });
    const planned = cloudConfigOf(created(plan.objects.find((o) => o.object === CCM)).spec?.template.spec);
    expect(planned.args).toContain(`--cloud-config=${COPY}`);
    expect(planned.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ hostPath: { path: COPY, type: 'File' } }),
        expect.objectContaining({ secret: { secretName: 'openstack-credentials' } }),
      ]),
    );
    expect(planned.volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: '/etc/openstack/secret', readOnly: true }),
    );
    // The copy shows as a file change on the control-plane node only, without its text (credentials).
    const copies = plan.files.filter((f) => f.path === COPY);
    expect(copies.map((f) => f.node)).toEqual(['cp-1']);
    for (const secret of SECRETS) expect(JSON.stringify(plan)).not.toContain(secret);
    // A dry run: no copy written, no node file touched.
    expect(await nodeFiles(t)).toEqual(before);

    expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
    const deployed = await t.apps.readNamespacedDeployment({
      name: 'openstack-cloud-controller-manager',
      namespace: 'kube-system',
    });
    expect(cloudConfigOf(deployed.spec?.template.spec)).toEqual(planned);

    // Migrated: kube-controller-manager names no cloud config, the deployed CCM does, with its Secret.
    const after = await planUpgrade({ clients: t, options: {}, pollMs: 10 });
    expect(after.files).toEqual([]);
    expect(after.objects.map((o) => o.action)).toEqual(after.objects.map(() => 'unchanged'));
  });
});
