/**
 * DynamoRunStore against dynalite (a real DynamoDB) on loopback, through @aws-sdk/client-dynamodb: the
 * shared RunStore contract, the lock raced by stores with clients of their own, what a stopped Lambda
 * leaves behind, large records and snapshots, and the table's keys.
 */
import { randomBytes } from 'node:crypto';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClusterLockedError, InvalidInputError } from '../../lib/errors.ts';
import { SnapshotSchema } from '../../lib/steps/snapshot.ts';
import { DynamoRunStore, MAX_PART_BYTES } from '../../lib/store/dynamo-store.ts';
import type { Json } from '../../lib/store/run-record.ts';
import { lockKey, runKey } from '../../lib/store/table.ts';
import { describeRunStoreContract, rejection, upgrade } from './contract.ts';
import { type Dynalite, startDynalite } from './dynalite.ts';

let db: Dynalite;
beforeAll(async () => {
  db = await startDynalite();
});
afterAll(async () => {
  await db?.close();
});

describeRunStoreContract('DynamoRunStore', async (now) => {
  const tableName = await db.table();
  const client = db.client();
  return {
    store: () => new DynamoRunStore({ client, tableName, now: () => now().toISOString() }),
    another: () => new DynamoRunStore({ client: db.client(), tableName }),
  };
});

describe('DynamoRunStore', () => {
  let tableName: string;
  let doc: DynamoDBDocumentClient;
  let clock: number;
  const store = () =>
    new DynamoRunStore({
      client: db.client(),
      tableName,
      now: () => {
        clock += 1000;
        return new Date(clock).toISOString();
      },
    });
  const itemsOf = async (clusterId = 'c1') =>
    (
      await doc.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': `CLUSTER#${clusterId}` },
        }),
      )
    ).Items ?? [];

  beforeEach(async () => {
    tableName = await db.table();
    doc = DynamoDBDocumentClient.from(db.client());
    clock = Date.parse('2026-01-01T00:00:00Z');
  });

  it('keeps the lock and the record at the documented keys', async () => {
    const record = await store().begin(upgrade('r1'));
    const lock = await doc.send(new GetCommand({ TableName: tableName, Key: lockKey('c1') }));
    expect(lock.Item).toEqual({
      ...lockKey('c1'),
      runId: 'r1',
      kind: 'upgrade',
      startedAt: record.startedAt,
    });
    const head = await doc.send(new GetCommand({ TableName: tableName, Key: runKey('c1', 'r1') }));
    expect(head.Item).toMatchObject({ pk: 'CLUSTER#c1', sk: 'RUN#r1', version: 1 });
    await store().recordStep('c1', 'r1', 'preflight', { ok: true });
    await store().finish('c1', 'r1', { status: 'succeeded' });
    // The record is all that is left: version 1, +1 for the step, +1 for finish.
    expect(await itemsOf()).toEqual([expect.objectContaining({ sk: 'RUN#r1', version: 3 })]);
  });

  it('lets exactly one of two stores on separate clients take the cluster, 10 times over', async () => {
    for (let round = 0; round < 10; round++) {
      const clusterId = `race-${round}`;
      const results = await Promise.allSettled(
        ['a', 'b'].map((runId) =>
          new DynamoRunStore({ client: db.client(), tableName }).begin(upgrade(runId, clusterId)),
        ),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]).toBeInstanceOf(ClusterLockedError);
    }
  });

  it('lets exactly one of 10 racing stores take a cluster freed by a finish that stopped halfway', async () => {
    const s = store();
    await s.begin(upgrade('r0'));
    await s.finish('c1', 'r0', { status: 'failed' });
    // A finish stopped after marking the record: the lock still names r0.
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...lockKey('c1'), runId: 'r0', kind: 'upgrade', startedAt: '2026-01-01T00:00:01.000Z' },
      }),
    );
    expect(await s.current('c1')).toBeUndefined();
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        new DynamoRunStore({ client: db.client(), tableName }).begin(upgrade(`r${i + 1}`)),
      ),
    );
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.runId] : []));
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ClusterLockedError);
    expect((await s.current('c1'))?.runId).toBe(won[0]);
  });

  it('recovers a begin stopped between taking the lock and writing the record', async () => {
    const holder = { runId: 'r1', kind: 'upgrade', startedAt: '2026-01-01T00:00:00.000Z' };
    await doc.send(new PutCommand({ TableName: tableName, Item: { ...lockKey('c1'), ...holder } }));
    expect(await store().current('c1')).toMatchObject({ ...holder, status: 'running', steps: {} });
    await expect(store().begin(upgrade('r2'))).rejects.toBeInstanceOf(ClusterLockedError);
    const resumed = await store().begin(upgrade('r1'));
    expect(resumed).toMatchObject({ ...holder, status: 'running' });
    expect(await store().get('c1', 'r1')).toEqual(resumed);
  });

  it('resumes a running run whose lock was released from outside (an execution that ended)', async () => {
    const begun = await store().begin(upgrade('r1'));
    await doc.send(new DeleteCommand({ TableName: tableName, Key: lockKey('c1') }));
    expect(await store().current('c1')).toBeUndefined();
    expect(await store().begin(upgrade('r1'))).toEqual(begun);
    expect(await store().current('c1')).toEqual(begun);
  });

  it('stores a 5,000-node snapshot and 5,000 step records, and reads them back whole', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    const snapshot = bigSnapshot(5000);
    expect(SnapshotSchema.safeParse(snapshot).success).toBe(true);
    const started = performance.now();
    expect(await s.setSnapshotOnce('c1', 'r1', snapshot)).toEqual(snapshot);
    const written = performance.now() - started;
    await s.update('c1', 'r1', (r) => ({
      ...r,
      steps: Object.fromEntries(
        Array.from({ length: 5000 }, (_, n) => [
          `kubelet/worker-${n}`,
          { at: r.updatedAt, result: { node: `worker-${n}`, changed: true, restarted: true } },
        ]),
      ),
    }));
    const back = await new DynamoRunStore({ client: db.client(), tableName }).get('c1', 'r1');
    expect(back?.snapshot).toEqual(snapshot);
    expect(Object.keys(back?.steps ?? {})).toHaveLength(5000);
    const sizes = (await itemsOf())
      .filter((i) => i.sk !== 'LOCK')
      .map((i) => ({ sk: i.sk, bytes: (i.record ?? i.data).length as number }));
    console.log(
      `5,000 nodes: snapshot ${JSON.stringify(snapshot).length} bytes as JSON, items ${JSON.stringify(sizes)}, written in ${written.toFixed(0)} ms`,
    );
    for (const { bytes } of sizes) expect(bytes).toBeLessThanOrEqual(MAX_PART_BYTES);
  });

  it('splits a snapshot too big for one item into parts, and keeps only the winner’s parts', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    // Random text does not compress: about 2.6 parts.
    const blobs = (i: number) => ({ writer: i, noise: randomBytes(750_000).toString('base64') });
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        new DynamoRunStore({ client: db.client(), tableName }).setSnapshotOnce('c1', 'r1', blobs(i)),
      ),
    );
    const stored = (await s.get('c1', 'r1'))?.snapshot;
    for (const a of answers) expect(a).toEqual(stored);
    const parts = (await itemsOf()).filter((i) => String(i.sk).includes('#SNAPSHOT#'));
    expect(parts.length).toBeGreaterThan(1);
    expect(new Set(parts.map((p) => String(p.sk).split('#')[3])).size).toBe(1);
    expect((await s.list('c1'))[0]?.snapshot).toEqual(stored);
  });

  it('refuses a record that cannot fit an item, and leaves the stored one as it was', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    await s.recordStep('c1', 'r1', 'preflight', { ok: true });
    const err = await rejection(s.recordStep('c1', 'r1', 'huge', randomBytes(400_000).toString('base64')));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toMatch(/run r1 of cluster c1 would take \d+ KB compressed, over the 380 KB/);
    expect(Object.keys((await s.get('c1', 'r1'))?.steps ?? {})).toEqual(['preflight']);
  });

  it('names a broken record by its key, never by its contents', async () => {
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...runKey('c1', 'r1'), version: 1, record: Buffer.from('token: s3cr3t') },
      }),
    );
    const err = await rejection(store().get('c1', 'r1'));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toContain('CLUSTER#c1/RUN#r1');
    expect(err.message).not.toContain('s3cr3t');
  });

  it('says which table is missing', async () => {
    const err = await rejection(
      new DynamoRunStore({ client: db.client(), tableName: 'nope' }).begin(upgrade('r1')),
    );
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toMatch(/DynamoDB table nope does not exist/);
  });
});

/** A snapshot of `n` nodes shaped as preflight records it (lib/steps/snapshot.ts). */
function bigSnapshot(n: number): Json {
  const names = Array.from({ length: n }, (_, i) => (i < 3 ? `cp-${i}` : `worker-${i}`));
  const sha = (i: number, f: string) => Buffer.from(`${i}${f}`).toString('hex').padEnd(64, '0').slice(0, 64);
  return {
    takenAt: '2026-01-01T00:00:00Z',
    provider: 'aws',
    kubernetesVersion: 'v1.26.15',
    ccmImage: 'registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.6',
    clusterName: 'prod-eu-1',
    ccmReplicas: 3,
    nodes: Object.fromEntries(
      names.map((name, i) => [
        name,
        {
          role: i < 3 ? 'control-plane' : 'worker',
          providerID: `aws:///eu-west-1${'abc'[i % 3]}/i-0${(0x1000000 + i * 7919).toString(16)}abcdef`,
          labels: {
            'topology.kubernetes.io/region': 'eu-west-1',
            'topology.kubernetes.io/zone': `eu-west-1${'abc'[i % 3]}`,
            'node.kubernetes.io/instance-type': 'm5.xlarge',
          },
          addresses: [
            { type: 'InternalIP', address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
            { type: 'Hostname', address: `ip-10-0-${(i >> 8) & 255}-${i & 255}.eu-west-1.compute.internal` },
          ],
        },
      ]),
    ),
    files: Object.fromEntries(
      names.map((name, i) => [
        name,
        [
          {
            path: '/var/lib/kubelet/kubeadm-flags.env',
            exists: true,
            sha256: sha(i, 'env'),
            kind: 'kubelet-env',
            flags: {
              '--cloud-provider': 'aws',
              '--container-runtime-endpoint': 'unix:///run/containerd/containerd.sock',
            },
          },
          { path: '/etc/default/kubelet', exists: false, kind: 'kubelet-env' },
          { path: '/etc/sysconfig/kubelet', exists: false, kind: 'kubelet-env' },
        ] as Json[],
      ]),
    ),
    loadBalancers: [{ namespace: 'default', name: 'web', ingress: ['a1.elb.amazonaws.com'] }],
  };
}
