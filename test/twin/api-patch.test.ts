/**
 * PATCH over HTTP with the real client: each patch type routed by Content-Type (JSON patch, merge patch,
 * strategic merge patch, server-side apply), the options each needs, field managers, dry runs, the status
 * subresource, and the errors (415, 422, 404, 409, 400).
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, failure, json, startApiHarness } from './api-harness.ts';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
  await h.core.createNamespace({ body: { metadata: { name: 'p' } } });
});
afterAll(() => h.stop());

const as = (type: string) => setHeaderOptions('Content-Type', type);

function deployment(name: string, containers: { name: string; image: string }[]): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'p' },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers } },
    },
  };
}

describe('patch types', () => {
  it('JSON patch (the client default)', async () => {
    await h.core.createNamespacedConfigMap({
      namespace: 'p',
      body: { metadata: { name: 'jp' }, data: { a: '1' } },
    });
    const patched = await h.core.patchNamespacedConfigMap({
      namespace: 'p',
      name: 'jp',
      body: [
        { op: 'replace', path: '/data/a', value: '2' },
        { op: 'add', path: '/data/b', value: '3' },
      ],
    });
    expect(patched.data).toEqual({ a: '2', b: '3' });
  });

  it('JSON merge patch replaces lists and removes keys set to null', async () => {
    await h.apps.createNamespacedDeployment({
      namespace: 'p',
      body: deployment('mp', [
        { name: 'a', image: 'a:1' },
        { name: 'b', image: 'b:1' },
      ]),
    });
    const patched = await h.apps.patchNamespacedDeployment(
      {
        namespace: 'p',
        name: 'mp',
        body: {
          metadata: { labels: { x: 'y' } },
          spec: { template: { spec: { containers: [{ name: 'a', image: 'a:2' }] } } },
        },
      },
      as(PatchStrategy.MergePatch),
    );
    expect(patched.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`)).toEqual(['a=a:2']);
    expect(patched.metadata?.labels).toEqual({ x: 'y' });
    expect(patched.metadata?.generation).toBe(2);
    const removed = await h.apps.patchNamespacedDeployment(
      { namespace: 'p', name: 'mp', body: { metadata: { labels: { x: null } } } },
      as(PatchStrategy.MergePatch),
    );
    expect(removed.metadata?.labels ?? {}).toEqual({});
  });

  it('strategic merge patch merges containers by name', async () => {
    await h.apps.createNamespacedDeployment({
      namespace: 'p',
      body: deployment('smp', [
        { name: 'a', image: 'a:1' },
        { name: 'b', image: 'b:1' },
      ]),
    });
    const patched = await h.apps.patchNamespacedDeployment(
      {
        namespace: 'p',
        name: 'smp',
        body: { spec: { template: { spec: { containers: [{ name: 'b', image: 'b:2' }] } } } },
      },
      as(PatchStrategy.StrategicMergePatch),
    );
    expect(patched.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`)).toEqual([
      'a=a:1',
      'b=b:2',
    ]);
  });

  it('server-side apply creates (201), records the manager, and updates', async () => {
    const applied = await h.objects.patch(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'p' }, data: { a: '1' } },
      undefined,
      undefined,
      'applier',
      false,
      PatchStrategy.ServerSideApply,
    );
    const meta = applied.metadata as V1ObjectMeta;
    expect(meta.uid).toBeTruthy();
    expect(meta.managedFields?.map((m) => [m.manager, m.operation])).toEqual([['applier', 'Apply']]);
    const again = await h.objects.patch(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'p' }, data: { a: '2' } },
      undefined,
      undefined,
      'applier',
      false,
      PatchStrategy.ServerSideApply,
    );
    expect((again as { data?: unknown }).data).toEqual({ a: '2' });
  });

  it('answers a created object with 201 and an updated one with 200', async () => {
    const body = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-apply\ndata:\n  a: "1"\n';
    const headers = { 'Content-Type': 'application/apply-patch+yaml' };
    const url = '/api/v1/namespaces/p/configmaps/yaml-apply?fieldManager=yaml';
    expect((await h.fetch(url, { method: 'PATCH', headers, body })).status).toBe(201);
    expect((await h.fetch(url, { method: 'PATCH', headers, body })).status).toBe(200);
  });

  it('409 Conflict when applying a field another manager owns, unless forced', async () => {
    const apply = (manager: string, value: string, force: boolean) =>
      h.objects.patch(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'contested', namespace: 'p' },
          data: { key: value },
        },
        undefined,
        undefined,
        manager,
        force,
        PatchStrategy.ServerSideApply,
      );
    await apply('first', 'one', false);
    const { code, status } = await failure(apply('second', 'two', false));
    expect([code, status.reason]).toEqual([409, 'Conflict']);
    const forced = await apply('second', 'two', true);
    expect((forced as { data?: unknown }).data).toEqual({ key: 'two' });
  });
});

describe('patch options and errors', () => {
  const url = '/api/v1/namespaces/p/configmaps/opts';
  beforeAll(async () => {
    await h.core.createNamespacedConfigMap({
      namespace: 'p',
      body: { metadata: { name: 'opts' }, data: { a: '1' } },
    });
  });

  it('415 for a Content-Type that is no patch type', async () => {
    const res = await h.fetch(url, {
      method: 'PATCH',
      headers: { 'Content-Type': 'text/plain' },
      body: '{}',
    });
    const status = await json(res);
    expect([res.status, status.reason]).toEqual([415, 'UnsupportedMediaType']);
    expect(status.message).toContain('application/strategic-merge-patch+json');
  });

  it('422 for apply without a fieldManager, and for force on other patches', async () => {
    const apply = await h.fetch(url, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/apply-patch+yaml' },
      body: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: opts}\n',
    });
    const status = await json(apply);
    expect([apply.status, status.reason]).toEqual([422, 'Invalid']);
    expect(status.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
    const forced = await h.fetch(`${url}?force=true`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: '{}',
    });
    expect([forced.status, (await json(forced)).reason]).toEqual([422, 'Invalid']);
  });

  it('404 for a patch of a missing object', async () => {
    const { code, status } = await failure(
      h.core.patchNamespacedConfigMap(
        { namespace: 'p', name: 'missing', body: { data: { a: '1' } } },
        as(PatchStrategy.MergePatch),
      ),
    );
    expect([code, status.reason]).toEqual([404, 'NotFound']);
  });

  it('400 for a malformed body, never a crash', async () => {
    for (const [type, body] of [
      [PatchStrategy.MergePatch, '{"data":'],
      [PatchStrategy.JsonPatch, 'not json'],
      [PatchStrategy.ServerSideApply, 'a: [unclosed'],
    ] as const) {
      const res = await h.fetch(`${url}?fieldManager=m`, {
        method: 'PATCH',
        headers: { 'Content-Type': type },
        body,
      });
      expect(res.status, type).toBe(400);
      expect((await json(res)).reason).toBe('BadRequest');
    }
    expect((await h.core.readNamespacedConfigMap({ namespace: 'p', name: 'opts' })).data).toEqual({ a: '1' });
  });

  it('400 for a patch that renames the object', async () => {
    const res = await h.fetch(url, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { name: 'renamed' } }),
    });
    expect(res.status).toBe(400);
  });

  it('dryRun=All patches nothing', async () => {
    const patched = await h.core.patchNamespacedConfigMap(
      { namespace: 'p', name: 'opts', dryRun: 'All', body: { data: { a: 'dry' } } },
      as(PatchStrategy.MergePatch),
    );
    expect(patched.data).toEqual({ a: 'dry' });
    expect((await h.core.readNamespacedConfigMap({ namespace: 'p', name: 'opts' })).data).toEqual({ a: '1' });
  });

  it('records the field manager, defaulting to the User-Agent product', async () => {
    const res = await h.fetch(url, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json', 'User-Agent': 'my-tool/1.2.3 (linux)' },
      body: JSON.stringify({ data: { b: '2' } }),
    });
    const managers = (await json(res)).metadata.managedFields.map((m: { manager: string }) => m.manager);
    expect(managers).toContain('my-tool');
    const named = await h.core.patchNamespacedConfigMap(
      { namespace: 'p', name: 'opts', fieldManager: 'named', body: { data: { c: '3' } } },
      as(PatchStrategy.MergePatch),
    );
    expect(named.metadata?.managedFields?.map((m) => m.manager)).toContain('named');
  });
});

describe('status subresource', () => {
  it('patches and applies only the status', async () => {
    await h.core.createNamespacedPod({
      namespace: 'p',
      body: { metadata: { name: 'pod' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
    });
    const patched = await h.core.patchNamespacedPodStatus(
      {
        namespace: 'p',
        name: 'pod',
        body: { status: { phase: 'Running' }, metadata: { labels: { no: 'no' } } },
      },
      as(PatchStrategy.MergePatch),
    );
    expect(patched.status?.phase).toBe('Running');
    expect(patched.metadata?.labels).toBeUndefined();

    const res = await h.fetch('/api/v1/namespaces/p/pods/pod/status?fieldManager=kubelet', {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/apply-patch+yaml' },
      body: 'apiVersion: v1\nkind: Pod\nmetadata: {name: pod, namespace: p}\nstatus: {phase: Succeeded}\n',
    });
    expect(res.status).toBe(200);
    expect((await h.core.readNamespacedPod({ namespace: 'p', name: 'pod' })).status?.phase).toBe('Succeeded');

    const missing = await h.fetch('/api/v1/namespaces/p/pods/ghost/status?fieldManager=kubelet', {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/apply-patch+yaml' },
      body: 'apiVersion: v1\nkind: Pod\nmetadata: {name: ghost}\nstatus: {phase: Running}\n',
    });
    expect(missing.status).toBe(404);
  });
});
