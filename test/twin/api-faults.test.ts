/**
 * What sits in front of every request: injected errors (429 with Retry-After, 500, 503), connection
 * resets, added latency, the API being unavailable, and the request counts (by verb, and in RBAC terms).
 */
import { Watch } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, failure, startApiHarness } from './api-harness.ts';
import { eventually } from './running-twin.ts';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterEach(() => {
  h.ctx.faults.clear();
  h.setAvailable(true);
});
afterAll(() => h.stop());

const listConfigMaps = () => h.core.listNamespacedConfigMap({ namespace: 'default' });

describe('injected errors', () => {
  it('429 TooManyRequests with Retry-After', async () => {
    h.ctx.faults.add({ kind: 'error', rate: 1, code: 429, verb: 'list', resource: 'configmaps' });
    const { code, status, headers } = await failure(listConfigMaps());
    expect([code, status.reason, status.details.retryAfterSeconds]).toEqual([429, 'TooManyRequests', 1]);
    expect(headers['retry-after']).toBe('1');
  });

  it.each([
    [500, 'InternalError'],
    [503, 'ServiceUnavailable'],
  ] as const)('%i %s', async (errorCode, reason) => {
    h.ctx.faults.add({ kind: 'error', rate: 1, code: errorCode });
    const { code, status } = await failure(listConfigMaps());
    expect([code, status.kind, status.reason]).toEqual([errorCode, 'Status', reason]);
  });

  it('hits only the verb and resource it names', async () => {
    h.ctx.faults.add({ kind: 'error', rate: 1, code: 500, verb: 'create', resource: 'secrets' });
    await h.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'unaffected' } },
    });
    await h.core.listNamespacedSecret({ namespace: 'default' });
    const { code } = await failure(
      h.core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 's' } } }),
    );
    expect(code).toBe(500);
    expect(h.ctx.store.tryGet('secrets', 'default', 's')).toBeUndefined();
  });
});

describe('connection faults', () => {
  it('a reset drops the connection without an answer', async () => {
    h.ctx.faults.add({ kind: 'reset', rate: 1, verb: 'list' });
    const err = await listConfigMaps().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: unknown }).code).toBeUndefined();
    expect((await h.fetch('/readyz')).status).toBe(200);
  });

  it('added latency delays the answer by at least that much', async () => {
    h.ctx.faults.add({ kind: 'latency', extra: 200, verb: 'get' });
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'slow' } } });
    const started = Date.now();
    await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'slow' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(195);
  });

  it('drops every connection while the API is unavailable, discovery and health included', async () => {
    h.setAvailable(false);
    for (const path of ['/readyz', '/version', '/api', '/api/v1/namespaces']) {
      await expect(h.fetch(path), path).rejects.toThrow();
    }
    await expect(listConfigMaps()).rejects.toThrow();
    h.setAvailable(true);
    expect((await h.fetch('/readyz')).status).toBe(200);
    expect((await listConfigMaps()).kind).toBe('ConfigMapList');
  });

  it('cuts open watches when the API becomes unavailable', async () => {
    let ended = false;
    await new Watch(h.kc).watch(
      '/api/v1/namespaces',
      {},
      () => {},
      () => {
        ended = true;
      },
    );
    await eventually(() => h.api.stats().byVerb.watch, { what: 'the watch to start' });
    h.setAvailable(false);
    await eventually(() => ended, { what: 'the watch to be cut' });
  });
});

describe('stats', () => {
  it('counts requests per verb', async () => {
    const before = h.api.stats();
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'counted' } } });
    await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'counted' });
    await listConfigMaps();
    await h.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'counted' });
    await h.fetch('/version');
    const after = h.api.stats();
    const delta = (verb: string) => (after.byVerb[verb] ?? 0) - (before.byVerb[verb] ?? 0);
    expect([delta('create'), delta('get'), delta('list'), delta('delete'), delta('patch')]).toEqual([
      1, 1, 1, 1, 0,
    ]);
    expect(after.requests - before.requests).toBe(5);
  });

  it('records each kind of resource request in RBAC terms: group, resource/subresource, namespace', async () => {
    const count = (verb: string, group: string, resource: string, namespace?: string) =>
      h.api
        .stats()
        .accesses.find(
          (a) => a.verb === verb && a.group === group && a.resource === resource && a.namespace === namespace,
        )?.count ?? 0;
    const before = count('list', '', 'pods');
    await h.core.listPodForAllNamespaces();
    await h.core.listPodForAllNamespaces();
    await h.core.readNodeStatus({ name: 'no-such-node' }).catch(() => undefined);
    await h.apps.listNamespacedDeployment({ namespace: 'kube-system' });
    expect(count('list', '', 'pods')).toBe(before + 2);
    expect(count('get', '', 'nodes/status')).toBeGreaterThanOrEqual(1);
    expect(count('list', 'apps', 'deployments', 'kube-system')).toBeGreaterThanOrEqual(1);
    expect(count('list', 'apps', 'deployments')).toBe(0);
  });
});
