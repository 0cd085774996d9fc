/**
 * list over HTTP with the real client: label and field selectors, all-namespace and cluster-scoped lists,
 * and limit/continue pagination with its tokens, counts and errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, failure, startApiHarness } from './api-harness.ts';

let h: ApiHarness;

const PODS: { name: string; labels: Record<string, string>; node: string; phase: string }[] = [
  { name: 'web-1', labels: { app: 'web', tier: 'front' }, node: 'cp-1', phase: 'Running' },
  {
    name: 'web-2',
    labels: { app: 'web', tier: 'front', canary: 'true' },
    node: 'worker-1',
    phase: 'Pending',
  },
  { name: 'db-1', labels: { app: 'db', tier: 'back' }, node: 'worker-1', phase: 'Running' },
  { name: 'batch-1', labels: { app: 'batch' }, node: 'worker-2', phase: 'Succeeded' },
];

beforeAll(async () => {
  h = await startApiHarness();
  await h.core.createNamespace({ body: { metadata: { name: 'other' } } });
  for (const p of PODS) {
    const pod = await h.core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: p.name, labels: p.labels },
        spec: { nodeName: p.node, containers: [{ name: 'c', image: 'x' }] },
      },
    });
    await h.core.replaceNamespacedPodStatus({
      namespace: 'default',
      name: p.name,
      body: { ...pod, status: { phase: p.phase } },
    });
  }
  await h.core.createNamespacedPod({
    namespace: 'other',
    body: {
      metadata: { name: 'web-1', labels: { app: 'web' } },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    },
  });
});
afterAll(() => h.stop());

async function podNames(labelSelector?: string, fieldSelector?: string): Promise<string[]> {
  const list = await h.core.listNamespacedPod({ namespace: 'default', labelSelector, fieldSelector });
  return list.items.map((p) => p.metadata?.name as string);
}

describe('label selectors', () => {
  it.each([
    ['app=web', ['web-1', 'web-2']],
    ['app==web', ['web-1', 'web-2']],
    ['app!=web', ['batch-1', 'db-1']],
    ['tier in (front,back)', ['db-1', 'web-1', 'web-2']],
    ['tier notin (front)', ['batch-1', 'db-1']],
    ['canary', ['web-2']],
    ['!canary', ['batch-1', 'db-1', 'web-1']],
    ['app=web,!canary', ['web-1']],
    ['app in (web, db),tier!=back', ['web-1', 'web-2']],
  ])('%s', async (selector, expected) => {
    expect(await podNames(selector)).toEqual(expected);
  });

  it('400 for a selector it cannot parse', async () => {
    const { code, status } = await failure(
      h.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app in web' }),
    );
    expect([code, status.reason]).toEqual([400, 'BadRequest']);
  });
});

describe('field selectors', () => {
  it.each([
    ['metadata.name=db-1', ['db-1']],
    ['metadata.namespace==default', ['batch-1', 'db-1', 'web-1', 'web-2']],
    ['spec.nodeName=worker-1', ['db-1', 'web-2']],
    ['status.phase=Running', ['db-1', 'web-1']],
    ['status.phase!=Running,spec.nodeName!=worker-2', ['web-2']],
  ])('%s', async (selector, expected) => {
    expect(await podNames(undefined, selector)).toEqual(expected);
  });

  it('combines with a label selector', async () => {
    expect(await podNames('app=web', 'spec.nodeName=worker-1')).toEqual(['web-2']);
  });

  it('400 for a field the type does not index', async () => {
    const { code, status } = await failure(
      h.core.listNamespacedPod({ namespace: 'default', fieldSelector: 'spec.hostname=x' }),
    );
    expect([code, status.reason, status.message]).toEqual([
      400,
      'BadRequest',
      'field label not supported: spec.hostname',
    ]);
    const nodes = await failure(h.core.listNode({ fieldSelector: 'spec.nodeName=x' }));
    expect(nodes.code).toBe(400);
  });

  it('selects events the way kubectl describe asks for them', async () => {
    const pod = await h.core.readNamespacedPod({ namespace: 'default', name: 'db-1' });
    const event = (name: string, reason: string, involvedName: string, type = 'Normal') => ({
      metadata: { name },
      involvedObject: {
        kind: 'Pod',
        namespace: 'default',
        name: involvedName,
        uid: pod.metadata?.uid,
        apiVersion: 'v1',
      },
      reason,
      type,
      message: reason,
      source: { component: 'kubelet' },
    });
    await h.core.createNamespacedEvent({ namespace: 'default', body: event('e1', 'Pulled', 'db-1') });
    await h.core.createNamespacedEvent({
      namespace: 'default',
      body: event('e2', 'BackOff', 'db-1', 'Warning'),
    });
    await h.core.createNamespacedEvent({ namespace: 'default', body: event('e3', 'Pulled', 'web-1') });
    const events = async (fieldSelector: string) =>
      (await h.core.listNamespacedEvent({ namespace: 'default', fieldSelector })).items.map(
        (e) => e.metadata?.name,
      );
    expect(
      await events(
        `involvedObject.name=db-1,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=${pod.metadata?.uid}`,
      ),
    ).toEqual(['e1', 'e2']);
    expect(await events('type=Warning')).toEqual(['e2']);
    expect(await events('reason=Pulled,source=kubelet,involvedObject.apiVersion=v1')).toEqual(['e1', 'e3']);
    expect(await events('involvedObject.fieldPath=')).toEqual(['e1', 'e2', 'e3']);
  });
});

describe('scopes', () => {
  it('lists a namespaced type across namespaces, and a cluster-scoped type', async () => {
    const all = await h.core.listPodForAllNamespaces({ labelSelector: 'app=web' });
    expect(all.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)).toEqual([
      'default/web-1',
      'default/web-2',
      'other/web-1',
    ]);
    const namespaces = await h.core.listNamespace({ fieldSelector: 'status.phase=Active' });
    expect(namespaces.items.map((n) => n.metadata?.name)).toContain('other');
    expect(namespaces.metadata?.resourceVersion).toBe(String(h.ctx.store.resourceVersion));
  });

  it('answers an empty list for a namespace with nothing in it', async () => {
    expect((await h.core.listNamespacedPod({ namespace: 'kube-public' })).items).toEqual([]);
  });
});

describe('pagination', () => {
  it('pages with limit and continue, keeping the first page resourceVersion', async () => {
    const first = await h.core.listNamespacedPod({ namespace: 'default', limit: 3 });
    expect(first.items.map((p) => p.metadata?.name)).toEqual(['batch-1', 'db-1', 'web-1']);
    expect(first.metadata?.remainingItemCount).toBe(1);
    expect(first.metadata?._continue).toBeTruthy();
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'bump' } } });
    const second = await h.core.listNamespacedPod({
      namespace: 'default',
      limit: 3,
      _continue: first.metadata?._continue,
    });
    expect(second.items.map((p) => p.metadata?.name)).toEqual(['web-2']);
    expect(second.metadata?._continue).toBeUndefined();
    expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
  });

  it('gives every object exactly once across pages', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await h.core.listPodForAllNamespaces({ limit: 2, _continue: token });
      seen.push(...page.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`));
      token = page.metadata?._continue;
    } while (token);
    expect(seen).toEqual([
      'default/batch-1',
      'default/db-1',
      'default/web-1',
      'default/web-2',
      'other/web-1',
    ]);
  });

  it('filters before counting the limit, without remainingItemCount', async () => {
    const page = await h.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web', limit: 1 });
    expect(page.items.map((p) => p.metadata?.name)).toEqual(['web-1']);
    expect(page.metadata?.remainingItemCount).toBeUndefined();
    const rest = await h.core.listNamespacedPod({
      namespace: 'default',
      labelSelector: 'app=web',
      limit: 1,
      _continue: page.metadata?._continue,
    });
    expect(rest.items.map((p) => p.metadata?.name)).toEqual(['web-2']);
  });

  it('400 for a continue token it did not issue', async () => {
    for (const token of [
      'garbage',
      Buffer.from('{"v":"meta.k8s.io/v1","rv":"x","start":"a"}').toString('base64url'),
    ]) {
      const { code, status } = await failure(
        h.core.listNamespacedPod({ namespace: 'default', limit: 1, _continue: token }),
      );
      expect([code, status.reason]).toEqual([400, 'BadRequest']);
      expect(status.message).toMatch(/^invalid continue token/);
    }
  });

  it('410 Expired for a token older than the kept history', async () => {
    const page = await h.core.listNamespacedPod({ namespace: 'default', limit: 1 });
    // Enough writes to push the page's resourceVersion out of the store's event history.
    const cm = h.ctx.store.create('configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'churn', namespace: 'default' },
    });
    let current = cm;
    for (let i = 0; i < 20_001; i++) {
      current = h.ctx.store.update('configmaps', { ...current, data: { i: String(i) } });
    }
    const { code, status } = await failure(
      h.core.listNamespacedPod({ namespace: 'default', limit: 1, _continue: page.metadata?._continue }),
    );
    expect([code, status.reason]).toEqual([410, 'Expired']);
    expect(status.message).toContain('The provided continue parameter is too old');
  });
});
