/**
 * The cluster registry, in files and in DynamoDB (dynalite on loopback): the same behaviour from both, the
 * Query pagination of a fleet, and records refused with the paths of their bad fields, never their values.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.ts';
import { DynamoRunStore } from '../../lib/store/dynamo-store.ts';
import {
  type ClusterRecordInput,
  type ClusterRegistry,
  DynamoClusterRegistry,
  LocalClusterRegistry,
} from '../../lib/store/registry.ts';
import { rejection } from './contract.ts';
import { type Dynalite, startDynalite } from './dynalite.ts';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:ccm-migrate/prod-eu-1-AbCdEf';
const cluster = (clusterId: string, extra: Partial<ClusterRecordInput> = {}): ClusterRecordInput => ({
  clusterId,
  provider: 'aws',
  distribution: 'kubeadm',
  kubeconfigSecretArn: ARN,
  desiredMode: 'external',
  policy: { maxUnavailable: 2, autoRollback: true },
  ...extra,
});

const KUBECONFIG = `apiVersion: v1
kind: Config
users:
- name: admin
  user:
    token: s3cr3t-t0ken`;

let db: Dynalite;
let dir: string;
beforeAll(async () => {
  db = await startDynalite();
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-registry-'));
});
afterAll(async () => {
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

let dirs = 0;
const registries: [string, () => Promise<ClusterRegistry>][] = [
  ['LocalClusterRegistry', async () => new LocalClusterRegistry(path.join(dir, String(++dirs)))],
  [
    'DynamoClusterRegistry',
    async () => new DynamoClusterRegistry({ client: db.client(), tableName: await db.table() }),
  ],
];

describe.each(registries)('%s', (_, make) => {
  it('puts, gets, replaces, lists by id and removes', async () => {
    const registry = await make();
    expect(await registry.get('prod-eu-1')).toBeUndefined();
    const stored = await registry.put(
      cluster('prod-eu-1', { labels: { team: 'payments', 'example.com/tier': 'gold' } }),
    );
    expect(stored).toEqual({
      ...cluster('prod-eu-1'),
      labels: { team: 'payments', 'example.com/tier': 'gold' },
    });
    expect(await registry.get('prod-eu-1')).toEqual(stored);
    await registry.put(cluster('dev-1', { provider: 'openstack', desiredMode: 'in-tree' }));
    const replaced = await registry.put(cluster('prod-eu-1', { policy: { autoRollback: false } }));
    expect(replaced.policy).toEqual({ maxUnavailable: 1, autoRollback: false });
    expect(replaced.labels).toBeUndefined();
    expect(await registry.list()).toEqual([
      { ...cluster('dev-1'), provider: 'openstack', desiredMode: 'in-tree' },
      replaced,
    ]);
    expect(await registry.remove('prod-eu-1')).toBe(true);
    expect(await registry.remove('prod-eu-1')).toBe(false);
    expect(await registry.get('prod-eu-1')).toBeUndefined();
    expect((await registry.list()).map((c) => c.clusterId)).toEqual(['dev-1']);
  });

  it('refuses bad records, naming each bad field by its path', async () => {
    const registry = await make();
    const bad = {
      ...cluster('Prod_1'),
      provider: 'digitalocean',
      distribution: 'eks',
      desiredMode: 'both',
      policy: { maxUnavailable: 0, autoRollback: 'yes' },
      labels: { team: 'a b' },
    } as never;
    const err = await rejection(registry.put(bad));
    expect(err).toBeInstanceOf(InvalidInputError);
    for (const field of [
      'clusterId',
      'provider',
      'distribution',
      'desiredMode',
      'policy.maxUnavailable',
      'policy.autoRollback',
      'labels.team',
    ]) {
      expect(err.message).toContain(`${field}: `);
    }
    expect(await registry.list()).toEqual([]);
    await expect(registry.get('../etc')).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('accepts the secret’s ARN only: never a kubeconfig, a token or a field that could hold one', async () => {
    const registry = await make();
    for (const kubeconfigSecretArn of [
      KUBECONFIG,
      `${ARN}\n${KUBECONFIG}`,
      's3cr3t-t0ken',
      'arn:aws:s3:::bucket/kubeconfig',
      '/home/me/.kube/config',
    ]) {
      const err = await rejection(registry.put(cluster('c1', { kubeconfigSecretArn })));
      expect(err).toBeInstanceOf(InvalidInputError);
      expect(err.message).toContain('kubeconfigSecretArn: ');
      expect(err.message).not.toContain('s3cr3t');
    }
    const smuggled = await rejection(registry.put({ ...cluster('c1'), kubeconfig: KUBECONFIG } as never));
    expect(smuggled.message).toMatch(/kubeconfig/);
    expect(smuggled.message).not.toContain('s3cr3t');
    const inLabel = await rejection(registry.put(cluster('c1', { labels: { token: 's3cr3t t0ken' } })));
    expect(inLabel.message).toContain('labels.token: ');
    expect(inLabel.message).not.toContain('s3cr3t');
    expect(await registry.get('c1')).toBeUndefined();
    for (const arn of [ARN, 'arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:x-1']) {
      await expect(registry.put(cluster('c1', { kubeconfigSecretArn: arn }))).resolves.toMatchObject({
        kubeconfigSecretArn: arn,
      });
    }
  });
});

describe('DynamoClusterRegistry', () => {
  it('lists a fleet of 130 clusters through Query pages, in id order, apart from the runs', async () => {
    const client = db.client();
    const queries: number[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand') queries.push(1);
        return next(args);
      },
      { step: 'initialize' },
    );
    const tableName = await db.table();
    const registry = new DynamoClusterRegistry({ client, tableName, pageSize: 25 });
    await new DynamoRunStore({ client, tableName }).begin({
      clusterId: 'cluster-000',
      runId: 'r1',
      kind: 'upgrade',
    });
    const ids = Array.from({ length: 130 }, (_, i) => `cluster-${String(i).padStart(3, '0')}`);
    await Promise.all(ids.map((id) => registry.put(cluster(id))));
    const listed = await registry.list();
    expect(listed.map((c) => c.clusterId)).toEqual(ids);
    expect(queries.length).toBeGreaterThanOrEqual(6);
  });

  it('says which table is missing', async () => {
    const err = await rejection(new DynamoClusterRegistry({ client: db.client(), tableName: 'nope' }).list());
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toMatch(/DynamoDB table nope does not exist/);
  });
});

describe('LocalClusterRegistry', () => {
  it('keeps one file per cluster, and ignores temp files a killed process left', async () => {
    const root = path.join(dir, 'files');
    const registry = new LocalClusterRegistry(root);
    await registry.put(cluster('c1'));
    await writeFile(path.join(root, 'registry', '.c2.json.1a2b3c4d'), '{"clusterId":"c2"');
    expect(await readdir(path.join(root, 'registry'))).toContain('c1.json');
    expect((await registry.list()).map((c) => c.clusterId)).toEqual(['c1']);
  });
});
