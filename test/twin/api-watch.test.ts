/**
 * watch over HTTP with the real @kubernetes/client-node Watch and informer: initial state, resuming from a
 * resourceVersion, selectors (objects moving in and out), 410 Expired, timeoutSeconds, and the stream
 * ending when the server closes.
 */
import { type KubernetesObject, makeInformer, type V1ConfigMap, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, type Json, json, startApiHarness } from './api-harness.ts';
import { eventually } from './running-twin.ts';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(() => h.stop());

interface Seen {
  readonly events: [string, string][];
  readonly raw: { type: string; object: Json }[];
  done: unknown;
  finished: boolean;
  abort(): void;
}

async function watch(
  path: string,
  query: Record<string, string | number | boolean | undefined>,
): Promise<Seen> {
  const seen: Seen = { events: [], raw: [], done: undefined, finished: false, abort: () => {} };
  const controller = await new Watch(h.kc).watch(
    path,
    query,
    (type, object) => {
      seen.events.push([type, (object as KubernetesObject).metadata?.name ?? object.reason]);
      seen.raw.push({ type, object });
    },
    (err) => {
      seen.done = err;
      seen.finished = true;
    },
  );
  seen.abort = () => controller.abort();
  return seen;
}

const CM_PATH = '/api/v1/namespaces/watched/configmaps';

async function cm(name: string, labels?: Record<string, string>): Promise<V1ConfigMap> {
  return h.core.createNamespacedConfigMap({ namespace: 'watched', body: { metadata: { name, labels } } });
}

describe('Watch', () => {
  beforeAll(async () => {
    await h.core.createNamespace({ body: { metadata: { name: 'watched' } } });
    await cm('existing');
  });

  it('starts with the current objects when no resourceVersion is given, then streams changes', async () => {
    const w = await watch(CM_PATH, {});
    await eventually(() => w.events.length === 1, { what: 'the initial ADDED' });
    const created = await cm('new-one');
    await h.core.replaceNamespacedConfigMap({
      namespace: 'watched',
      name: 'new-one',
      body: { ...created, data: { a: '1' } },
    });
    await h.core.deleteNamespacedConfigMap({ namespace: 'watched', name: 'new-one' });
    await eventually(() => w.events.length === 4, { what: 'four events' });
    expect(w.events).toEqual([
      ['ADDED', 'existing'],
      ['ADDED', 'new-one'],
      ['MODIFIED', 'new-one'],
      ['DELETED', 'new-one'],
    ]);
    w.abort();
  });

  it('resumes after a resourceVersion with exactly the changes since', async () => {
    const list = await h.core.listNamespacedConfigMap({ namespace: 'watched' });
    await cm('after-list');
    const w = await watch(CM_PATH, {
      resourceVersion: list.metadata?.resourceVersion,
      allowWatchBookmarks: true,
    });
    await cm('later');
    await eventually(() => w.events.length === 2, { what: 'two events' });
    expect(w.events).toEqual([
      ['ADDED', 'after-list'],
      ['ADDED', 'later'],
    ]);
    expect(Number(w.raw[1]?.object.metadata.resourceVersion)).toBeGreaterThan(
      Number(list.metadata?.resourceVersion),
    );
    w.abort();
  });

  it('applies selectors, sending objects that leave the selection as DELETED and that join it as ADDED', async () => {
    const w = await watch(CM_PATH, { labelSelector: 'team=a', fieldSelector: 'metadata.name!=ignored' });
    const moving = await cm('moving', { team: 'a' });
    await cm('ignored', { team: 'a' });
    await cm('other-team', { team: 'b' });
    const left = await h.core.replaceNamespacedConfigMap({
      namespace: 'watched',
      name: 'moving',
      body: { ...moving, metadata: { ...moving.metadata, labels: { team: 'b' } } },
    });
    await h.core.replaceNamespacedConfigMap({
      namespace: 'watched',
      name: 'moving',
      body: { ...left, metadata: { ...left.metadata, labels: { team: 'a' } } },
    });
    await eventually(() => w.events.length === 3, { what: 'three events' });
    expect(w.events).toEqual([
      ['ADDED', 'moving'],
      ['DELETED', 'moving'],
      ['ADDED', 'moving'],
    ]);
    w.abort();
  });

  it('sends an ERROR event with a 410 Expired Status for a resourceVersion older than the history', async () => {
    const old = h.ctx.store.resourceVersion;
    let current = h.ctx.store.create('configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'churn', namespace: 'default' },
    });
    for (let i = 0; i < 20_001; i++)
      current = h.ctx.store.update('configmaps', { ...current, data: { i: String(i) } });
    const w = await watch(CM_PATH, { resourceVersion: String(old) });
    await eventually(() => w.finished, { what: 'the watch to end' });
    expect(w.raw).toHaveLength(1);
    expect(w.raw[0]?.type).toBe('ERROR');
    expect(w.raw[0]?.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it('ends after timeoutSeconds', async () => {
    const w = await watch(CM_PATH, {
      timeoutSeconds: 1,
      resourceVersion: String(h.ctx.store.resourceVersion),
    });
    await eventually(() => w.finished, { what: 'the watch to time out', timeoutMs: 5_000 });
    expect(w.done).toBeNull();
  });

  it('streams JSON lines for watch=1 on a cluster-scoped type', async () => {
    const res = await h.fetch(`/api/v1/namespaces?watch=1&resourceVersion=${h.ctx.store.resourceVersion}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await h.core.createNamespace({ body: { metadata: { name: 'streamed' } } });
    const { value } = await reader.read();
    const line = JSON.parse(new TextDecoder().decode(value).trim());
    expect(line).toMatchObject({
      type: 'ADDED',
      object: { kind: 'Namespace', metadata: { name: 'streamed' } },
    });
    await reader.cancel();
  });

  it('400 before streaming for a bad selector', async () => {
    const res = await h.fetch(`${CM_PATH}?watch=true&fieldSelector=data.a%3Db`);
    expect([res.status, (await json(res)).reason]).toEqual([400, 'BadRequest']);
  });
});

describe('informer', () => {
  it('lists, then follows adds, updates and deletes', async () => {
    await h.core.createNamespace({ body: { metadata: { name: 'informed' } } });
    await h.core.createNamespacedConfigMap({ namespace: 'informed', body: { metadata: { name: 'first' } } });
    const informer = makeInformer(h.kc, '/api/v1/namespaces/informed/configmaps', () =>
      h.core.listNamespacedConfigMap({ namespace: 'informed' }),
    );
    const log: string[] = [];
    informer.on('add', (o) => log.push(`add ${o.metadata?.name}`));
    informer.on('update', (o) => log.push(`update ${o.metadata?.name} ${JSON.stringify(o.data)}`));
    informer.on('delete', (o) => log.push(`delete ${o.metadata?.name}`));
    await informer.start();
    await eventually(() => log.includes('add first'), { what: 'the listed object' });
    const second = await h.core.createNamespacedConfigMap({
      namespace: 'informed',
      body: { metadata: { name: 'second' } },
    });
    await h.core.replaceNamespacedConfigMap({
      namespace: 'informed',
      name: 'second',
      body: { ...second, data: { v: '2' } },
    });
    await h.core.deleteNamespacedConfigMap({ namespace: 'informed', name: 'first' });
    await eventually(() => log.includes('delete first'), { what: 'the delete' });
    expect(log).toEqual(['add first', 'add second', 'update second {"v":"2"}', 'delete first']);
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['second']);
    await informer.stop();
  });
});

describe('close', () => {
  it('ends open watches when the server closes', async () => {
    const other = await startApiHarness();
    const seen: { finished: boolean } = { finished: false };
    await new Watch(other.kc).watch(
      '/api/v1/namespaces',
      {},
      () => {},
      () => {
        seen.finished = true;
      },
    );
    await eventually(() => other.api.stats().byVerb.watch === 1, { what: 'the watch to start' });
    await other.stop();
    await eventually(() => seen.finished, { what: 'the client to see the end' });
  });
});
