/**
 * OpenStack whose in-tree cloud.conf takes its credentials from a Secret ([Global] secret-name), which the
 * external CCM does not read: the upgrade writes a translated copy next to the original on every
 * control-plane node and mounts it with that Secret; the downgrade removes the copy, every node file ends
 * byte for byte as it was, and no credential passes through the run's payloads, store or progress.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const SECRET_MINI = fileURLToPath(new URL('../fixtures/twins/openstack-secret-mini.yaml', import.meta.url));
const PLAIN_MINI = fileURLToPath(new URL('../fixtures/twins/openstack-mini.yaml', import.meta.url));
const SOURCE = '/etc/kubernetes/cloud.conf';
const COPY = '/etc/kubernetes/cloud.conf.external';
/** Values of the fixture's Secret and cloud.conf that must stay where they are. */
const SECRETS = ['fake-not-a-real-secret', 'keystone.ccm-twin.example'];

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function ccmPodSpec(e: E2E) {
  const d = await e.t.apps.readNamespacedDeployment({
    name: 'openstack-cloud-controller-manager',
    namespace: 'kube-system',
  });
  return d.spec?.template.spec;
}

const hasFile = (e: E2E, node: string, file: string): Promise<boolean> =>
  e.t.readFile(node, file).then(
    () => true,
    () => false,
  );

describe('OpenStack with [Global] secret-name upgraded to OCCM and back', () => {
  it('mounts a translated copy and the credentials Secret, then leaves every node file as it was', async () => {
    e2e = await startE2E(await fixtureSpec(SECRET_MINI));
    const start = await nodeFiles(e2e.t);
    const progress: string[] = [];
    const up = await e2e.upgrade({ onProgress: (p) => progress.push(JSON.stringify(p)) });
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');

    const pod = await ccmPodSpec(e2e);
    const container = pod?.containers.find((c) => c.name === 'cloud-controller-manager');
    expect(container?.args).toContain(`--cloud-config=${COPY}`);
    expect(pod?.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ hostPath: { path: COPY, type: 'File' } }),
        expect.objectContaining({ secret: { secretName: 'openstack-credentials' } }),
      ]),
    );
    expect(container?.volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: '/etc/openstack/secret', readOnly: true }),
    );
    const copy = await e2e.t.readFile('cp-1', COPY);
    expect(copy).toContain(
      'use-clouds = true\nclouds-file = /etc/openstack/secret/clouds.yaml\ncloud = openstack\n',
    );
    expect(copy).not.toMatch(/secret-name|secret-namespace|use-octavia|\[BlockStorage\]/);
    expect(copy).toContain('subnet-id = 6a5c1b0e-2f63-4d5c-9a8e-1f0e2d3c4b5a');
    // Only control-plane nodes run the CCM: workers get no copy.
    expect(await hasFile(e2e, 'worker-1', COPY)).toBe(false);

    const record = (await e2e.store.list('openstack-secret-mini')).find((r) => r.kind === 'upgrade');
    expect(record?.snapshot).toMatchObject({
      cloudConfigTranslation: {
        source: SOURCE,
        target: COPY,
        credentialsSecret: { name: 'openstack-credentials', namespace: 'kube-system' },
      },
    });
    const seen = JSON.stringify({ record, up, progress });
    for (const secret of SECRETS) expect(seen).not.toContain(secret);

    const down = await e2e.downgrade();
    expect(down.error).toBeUndefined();
    expect(down.status).toBe('SUCCEEDED');
    expect(await hasFile(e2e, 'cp-1', COPY)).toBe(false);
    const end = await nodeFiles(e2e.t);
    const hashes = (files: Map<string, string>) =>
      new Map([...files].filter(([f]) => start.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));
    expect(hashes(end)).toEqual(hashes(start));
    // Nothing of the run is left beside them but its backups.
    expect([...end.keys()].filter((f) => !start.has(f) && !f.includes('ccm-migrate-backup'))).toEqual([]);
    // The user's Secret is theirs: the downgrade leaves it.
    const secret = await e2e.t.core.readNamespacedSecret({
      name: 'openstack-credentials',
      namespace: 'kube-system',
    });
    expect(secret.data?.['clouds.yaml']).toBeDefined();

    await e2e.t.twin.monitor.stop();
    expect(e2e.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  });

  it('removes the copy when a failed upgrade rolls back', async () => {
    e2e = await startE2E(await fixtureSpec(SECRET_MINI));
    const { t } = e2e;
    const start = await nodeFiles(t);
    let copied: Promise<boolean> | undefined;
    const result = await e2e.upgrade({
      onEvent: (event) => {
        if (event.type !== 'StateEntered') return;
        if (event.state.name === UPGRADE_STATES.activate) {
          t.twin.faults.add({ kind: 'error', rate: 1, code: 500, verb: 'patch', resource: 'deployments' });
          copied = hasFile(e2e as E2E, 'cp-1', COPY);
        }
        if (event.state.name === UPGRADE_STATES.rollbackKubelets) t.twin.faults.clear('error');
      },
    });
    expect(result.error?.name).toBe('RolledBack');
    expect(await copied).toBe(true);
    expect(await hasFile(e2e, 'cp-1', COPY)).toBe(false);
    const hashes = (files: Map<string, string>) =>
      new Map([...files].filter(([f]) => start.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));
    expect(hashes(await nodeFiles(t))).toEqual(hashes(start));
  });

  it('refuses in preflight, changing nothing, a Secret outside the CCM’s namespace', async () => {
    const elsewhere = (text: string) =>
      text.replace('secret-namespace = kube-system', 'secret-namespace = openstack');
    e2e = await startE2E(
      await fixtureSpec(SECRET_MINI, {
        edits: [
          { group: 'cp', file: SOURCE, edit: elsewhere },
          { group: 'worker', file: SOURCE, edit: elsewhere },
        ],
      }),
    );
    const start = await nodeFiles(e2e.t);
    const up = await e2e.upgrade();
    expect(up.status).not.toBe('SUCCEEDED');
    expect(up.error?.cause).toMatch(/Secret openstack\/openstack-credentials .*runs in kube-system/);
    expect(await nodeFiles(e2e.t)).toEqual(start);
  });

  it('refuses in preflight, naming the file and not its text, a cloud.conf the agent cannot parse', async () => {
    const broken = (text: string) => `${text}password = fake-not-a-real-secret\\\n`;
    e2e = await startE2E(
      await fixtureSpec(SECRET_MINI, { edits: [{ group: 'cp', file: SOURCE, edit: broken }] }),
    );
    const start = await nodeFiles(e2e.t);
    const up = await e2e.upgrade();
    expect(up.status).not.toBe('SUCCEEDED');
    expect(up.error?.cause).toMatch(/\/etc\/kubernetes\/cloud\.conf: line 15 is not an INI/);
    expect(up.error?.cause).not.toContain('fake-not-a-real-secret');
    expect(await nodeFiles(e2e.t)).toEqual(start);
  });

  it.each([
    ['with', SECRET_MINI, (text: string) => text.replace('use-octavia = true', 'use-octavia = false')],
    ['without', PLAIN_MINI, (text: string) => `${text}\n[LoadBalancer]\nuse-octavia = no\n`],
  ])(
    'refuses in preflight, changing nothing, use-octavia = false (a config %s secret-name)',
    async (_, fixture, edit) => {
      e2e = await startE2E(
        await fixtureSpec(fixture, {
          edits: [
            { group: 'cp', file: SOURCE, edit },
            { group: 'worker', file: SOURCE, edit },
          ],
        }),
      );
      const start = await nodeFiles(e2e.t);
      const up = await e2e.upgrade();
      expect(up.status).not.toBe('SUCCEEDED');
      expect(up.error?.name).toBe('PreflightFailed');
      expect(up.error?.cause).toMatch(
        /cp-1:\/etc\/kubernetes\/cloud\.conf sets \[LoadBalancer\] use-octavia = false .*only Octavia/,
      );
      expect(up.error?.cause).not.toContain('fake-not-a-real-secret');
      expect(await nodeFiles(e2e.t)).toEqual(start);
    },
  );

  it('leaves a cloud.conf without secret-name as it is: the CCM mounts the original and no Secret', async () => {
    e2e = await startE2E(await fixtureSpec(PLAIN_MINI));
    const original = await readFile(
      fileURLToPath(new URL('../fixtures/twins/hosts/openstack-plain/cloud.conf', import.meta.url)),
      'utf8',
    );
    const up = await e2e.upgrade();
    expect(up.status).toBe('SUCCEEDED');
    const pod = await ccmPodSpec(e2e);
    expect(pod?.containers[0]?.args).toContain(`--cloud-config=${SOURCE}`);
    expect(pod?.volumes?.some((v) => v.secret)).toBe(false);
    expect(await hasFile(e2e, 'cp-1', COPY)).toBe(false);
    expect(await e2e.t.readFile('cp-1', SOURCE)).toBe(original);
  });
});
