/**
 * The API server's verbs over HTTP with the real @kubernetes/client-node: create, get, update (and the
 * status subresource), delete (propagation, finalizers, preconditions), deletecollection, dry runs, and the
 * Status errors each misuse gets.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiHarness, failure, json, startApiHarness } from './api-harness.ts';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(() => h.stop());

const JSON_BODY = { 'Content-Type': 'application/json' };

describe('create, get, update, delete', () => {
  it('round-trips a ConfigMap with server-set metadata', async () => {
    const created = await h.core.createNamespacedConfigMap({
      namespace: 'default',
      fieldManager: 'crud-test',
      body: { metadata: { name: 'round-trip', labels: { a: 'b' } }, data: { k: 'v' } },
    });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.namespace).toBe('default');
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.metadata?.managedFields?.map((m) => [m.manager, m.operation])).toEqual([
      ['crud-test', 'Update'],
    ]);

    const read = await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'round-trip' });
    expect(read.data).toEqual({ k: 'v' });

    read.data = { k: 'w' };
    const updated = await h.core.replaceNamespacedConfigMap({
      namespace: 'default',
      name: 'round-trip',
      body: read,
    });
    expect(updated.data).toEqual({ k: 'w' });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(
      Number(created.metadata?.resourceVersion),
    );

    await h.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'round-trip' });
    expect(
      (await failure(h.core.readNamespacedConfigMap({ namespace: 'default', name: 'round-trip' }))).code,
    ).toBe(404);
  });

  it('names objects from generateName', async () => {
    const created = await h.core.createNamespacedSecret({
      namespace: 'default',
      body: { metadata: { generateName: 'token-' }, stringData: { a: 'b' } },
    });
    expect(created.metadata?.name).toMatch(/^token-[a-z0-9]{5}$/);
  });

  it('serves every API group the twin has', async () => {
    await h.core.createNamespace({ body: { metadata: { name: 'groups' } } });
    const ns = 'groups';
    const template = {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'nginx' }] },
    };
    const deploy = await h.apps.createNamespacedDeployment({
      namespace: ns,
      body: { metadata: { name: 'web' }, spec: { selector: { matchLabels: { app: 'web' } }, template } },
    });
    expect(deploy.metadata?.generation).toBe(1);
    await h.apps.createNamespacedDaemonSet({
      namespace: ns,
      body: { metadata: { name: 'agent' }, spec: { selector: { matchLabels: { app: 'web' } }, template } },
    });
    await h.batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'once' },
        spec: { template: { ...template, spec: { ...template.spec, restartPolicy: 'Never' } } },
      },
    });
    await h.coordination.createNamespacedLease({
      namespace: ns,
      body: { metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
    });
    await h.rbac.createClusterRole({
      body: {
        metadata: { name: 'reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      },
    });
    await h.rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'read' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: ns }],
      },
    });
    await h.policy.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } },
      },
    });

    expect(
      (await h.apps.listNamespacedDaemonSet({ namespace: ns })).items.map((d) => d.metadata?.name),
    ).toEqual(['agent']);
    expect((await h.batch.readNamespacedJob({ namespace: ns, name: 'once' })).kind).toBe('Job');
    expect(
      (await h.coordination.readNamespacedLease({ namespace: ns, name: 'leader' })).spec?.holderIdentity,
    ).toBe('a');
    expect((await h.rbac.listClusterRole()).items.map((r) => r.metadata?.name)).toContain('reader');
    expect((await h.rbac.readNamespacedRoleBinding({ namespace: ns, name: 'read' })).roleRef.name).toBe(
      'reader',
    );
    expect((await h.policy.listPodDisruptionBudgetForAllNamespaces()).items).toHaveLength(1);

    // A spec change bumps generation; a metadata-only change does not.
    deploy.spec = { ...deploy.spec, replicas: 3 } as typeof deploy.spec;
    const bumped = await h.apps.replaceNamespacedDeployment({ namespace: ns, name: 'web', body: deploy });
    expect(bumped.metadata?.generation).toBe(2);
    bumped.metadata = { ...bumped.metadata, labels: { tier: 'front' } };
    expect(
      (await h.apps.replaceNamespacedDeployment({ namespace: ns, name: 'web', body: bumped })).metadata
        ?.generation,
    ).toBe(2);
  });
});

describe('create errors', () => {
  it('409 AlreadyExists for a duplicate name', async () => {
    const body = { metadata: { name: 'dup' } };
    await h.core.createNamespacedConfigMap({ namespace: 'default', body });
    const { code, status } = await failure(h.core.createNamespacedConfigMap({ namespace: 'default', body }));
    expect([code, status.reason, status.message]).toEqual([
      409,
      'AlreadyExists',
      'configmaps "dup" already exists',
    ]);
  });

  it('400 when the body namespace differs from the URL', async () => {
    const { code, status } = await failure(
      h.core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name: 'x', namespace: 'kube-system' } },
      }),
    );
    expect([code, status.reason]).toEqual([400, 'BadRequest']);
    expect(status.message).toBe(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  });

  it('400 when apiVersion or kind do not match the URL', async () => {
    const wrongVersion = await h.fetch('/api/v1/namespaces/default/configmaps', {
      method: 'POST',
      headers: JSON_BODY,
      body: JSON.stringify({ apiVersion: 'apps/v1', kind: 'ConfigMap', metadata: { name: 'x' } }),
    });
    expect(wrongVersion.status).toBe(400);
    expect((await json(wrongVersion)).message).toBe(
      'the API version in the data (apps/v1) does not match the expected API version (v1)',
    );
    const wrongKind = await h.fetch('/api/v1/namespaces/default/configmaps', {
      method: 'POST',
      headers: JSON_BODY,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } }),
    });
    expect([wrongKind.status, (await json(wrongKind)).reason]).toEqual([400, 'BadRequest']);
  });

  it('400 for a resourceVersion on a new object', async () => {
    const { code, status } = await failure(
      h.core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name: 'rv', resourceVersion: '3' } },
      }),
    );
    expect([code, status.message]).toEqual([
      400,
      'resourceVersion should not be set on objects to be created',
    ]);
  });

  it('422 Invalid without a name, 404 in a missing namespace', async () => {
    const noName = await failure(
      h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: {} } }),
    );
    expect([noName.code, noName.status.reason]).toEqual([422, 'Invalid']);
    expect(noName.status.details.causes[0].field).toBe('metadata.name');
    const noNs = await failure(
      h.core.createNamespacedConfigMap({ namespace: 'nowhere', body: { metadata: { name: 'x' } } }),
    );
    expect([noNs.code, noNs.status.message]).toEqual([404, 'namespaces "nowhere" not found']);
  });

  it('400 for a malformed or non-object body, 415 for a media type it does not decode', async () => {
    for (const body of ['{"metadata":', '[1,2]', 'null', '"text"']) {
      const res = await h.fetch('/api/v1/namespaces/default/configmaps', {
        method: 'POST',
        headers: JSON_BODY,
        body,
      });
      expect(res.status).toBe(400);
      expect((await json(res)).reason).toBe('BadRequest');
    }
    const proto = await h.fetch('/api/v1/namespaces/default/configmaps', {
      method: 'POST',
      headers: { 'Content-Type': 'application/vnd.kubernetes.protobuf' },
      body: 'not protobuf',
    });
    expect([proto.status, (await json(proto)).reason]).toEqual([400, 'BadRequest']);
    const cbor = await h.fetch('/api/v1/namespaces/default/configmaps', {
      method: 'POST',
      headers: { 'Content-Type': 'application/cbor' },
      body: '{}',
    });
    expect([cbor.status, (await json(cbor)).reason]).toEqual([415, 'UnsupportedMediaType']);
  });

  it('accepts YAML bodies', async () => {
    const res = await h.fetch('/api/v1/namespaces/default/configmaps', {
      method: 'POST',
      headers: { 'Content-Type': 'application/yaml' },
      body: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: "1"\n',
    });
    expect(res.status).toBe(201);
    expect((await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'from-yaml' })).data).toEqual({
      a: '1',
    });
  });
});

describe('update errors', () => {
  it('409 Conflict for a stale resourceVersion', async () => {
    const cm = await h.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'stale' } },
    });
    await h.core.replaceNamespacedConfigMap({
      namespace: 'default',
      name: 'stale',
      body: { ...cm, data: { a: '1' } },
    });
    const { code, status } = await failure(
      h.core.replaceNamespacedConfigMap({
        namespace: 'default',
        name: 'stale',
        body: { ...cm, data: { a: '2' } },
      }),
    );
    expect([code, status.reason]).toEqual([409, 'Conflict']);
    expect(status.message).toContain('the object has been modified');
  });

  it('400 when the URL name differs from the body, 404 for a missing object', async () => {
    const mismatch = await failure(
      h.core.replaceNamespacedConfigMap({
        namespace: 'default',
        name: 'one',
        body: { metadata: { name: 'two' } },
      }),
    );
    expect([mismatch.code, mismatch.status.message]).toEqual([
      400,
      'the name of the object (two) does not match the name on the URL (one)',
    ]);
    const missing = await failure(
      h.core.replaceNamespacedConfigMap({
        namespace: 'default',
        name: 'ghost',
        body: { metadata: { name: 'ghost' } },
      }),
    );
    expect([missing.code, missing.status.reason]).toEqual([404, 'NotFound']);
  });
});

describe('status subresource', () => {
  it('PUT .../status changes only the status; PUT on the object keeps it', async () => {
    const pod = await h.core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'status-pod' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
    });
    pod.status = { phase: 'Running' };
    pod.metadata = { ...pod.metadata, labels: { ignored: 'yes' } };
    const withStatus = await h.core.replaceNamespacedPodStatus({
      namespace: 'default',
      name: 'status-pod',
      body: pod,
    });
    expect(withStatus.status?.phase).toBe('Running');
    expect(withStatus.metadata?.labels).toBeUndefined();
    expect(
      (await h.core.readNamespacedPodStatus({ namespace: 'default', name: 'status-pod' })).status?.phase,
    ).toBe('Running');

    withStatus.status = { phase: 'Failed' };
    const main = await h.core.replaceNamespacedPod({
      namespace: 'default',
      name: 'status-pod',
      body: withStatus,
    });
    expect(main.status?.phase).toBe('Running');
  });

  it('404 for a subresource the type does not have', async () => {
    const res = await h.fetch('/api/v1/namespaces/default/configmaps/x/status');
    expect(res.status).toBe(404);
  });
});

describe('delete', () => {
  it('answers with the deleted pod, and with a Status Success for a ConfigMap', async () => {
    await h.core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'doomed' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
    });
    const pod = await h.fetch('/api/v1/namespaces/default/pods/doomed', { method: 'DELETE' });
    expect((await json(pod)).kind).toBe('Pod');
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'doomed' } } });
    const cm = await h.fetch('/api/v1/namespaces/default/configmaps/doomed', { method: 'DELETE' });
    expect(cm.status).toBe(200);
    expect(await json(cm)).toMatchObject({
      kind: 'Status',
      status: 'Success',
      details: { name: 'doomed', kind: 'configmaps' },
    });
  });

  it('keeps an object with finalizers, marked for deletion, until they are removed', async () => {
    await h.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'held', finalizers: ['example.com/hold'] } },
    });
    const res = await h.fetch('/api/v1/namespaces/default/configmaps/held', { method: 'DELETE' });
    const marked = await json(res);
    expect(marked.metadata.deletionTimestamp).toBeTruthy();
    const held = await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'held' });
    held.metadata = { ...held.metadata, finalizers: [] };
    await h.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'held', body: held });
    expect((await failure(h.core.readNamespacedConfigMap({ namespace: 'default', name: 'held' }))).code).toBe(
      404,
    );
  });

  it('409 when a precondition does not hold', async () => {
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'guarded' } } });
    const { code, status } = await failure(
      h.core.deleteNamespacedConfigMap({
        namespace: 'default',
        name: 'guarded',
        body: { preconditions: { uid: 'other' } },
      }),
    );
    expect([code, status.reason]).toEqual([409, 'Conflict']);
    expect(status.message).toContain('Precondition failed: UID in precondition: other');
  });

  it('propagates to owned objects, or orphans them', async () => {
    const owner = async (name: string) => {
      const o = await h.core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name } },
      });
      await h.core.createNamespacedConfigMap({
        namespace: 'default',
        body: {
          metadata: {
            name: `${name}-child`,
            ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name, uid: o.metadata?.uid as string }],
          },
        },
      });
    };
    await owner('bg');
    await h.core.deleteNamespacedConfigMap({
      namespace: 'default',
      name: 'bg',
      propagationPolicy: 'Background',
    });
    expect(
      (await failure(h.core.readNamespacedConfigMap({ namespace: 'default', name: 'bg-child' }))).code,
    ).toBe(404);

    await owner('orph');
    await h.core.deleteNamespacedConfigMap({
      namespace: 'default',
      name: 'orph',
      body: { propagationPolicy: 'Orphan' },
    });
    const child = await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'orph-child' });
    expect(child.metadata?.ownerReferences).toBeUndefined();
  });

  it('keeps an object that has another owner left, and deletes it with its last owner', async () => {
    const owner = (name: string) =>
      h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    const a = await owner('owner-a');
    const b = await owner('owner-b');
    const ref = (o: typeof a) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: o.metadata?.name as string,
      uid: o.metadata?.uid as string,
    });
    await h.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'shared-child', ownerReferences: [ref(a), ref(b)] } },
    });
    await h.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'owner-a' });
    const child = await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'shared-child' });
    expect(child.metadata?.ownerReferences?.map((r) => r.name)).toEqual(['owner-b']);
    await h.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'owner-b' });
    expect(
      (await failure(h.core.readNamespacedConfigMap({ namespace: 'default', name: 'shared-child' }))).code,
    ).toBe(404);
  });

  it('422 for an unknown propagationPolicy', async () => {
    await h.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'policy' } } });
    const res = await h.fetch('/api/v1/namespaces/default/configmaps/policy?propagationPolicy=Sideways', {
      method: 'DELETE',
    });
    expect([res.status, (await json(res)).reason]).toEqual([422, 'Invalid']);
  });

  it('deletes a collection by label selector', async () => {
    await h.core.createNamespace({ body: { metadata: { name: 'bulk' } } });
    for (const [name, tier] of [
      ['a', 'x'],
      ['b', 'x'],
      ['c', 'y'],
    ] as const) {
      await h.core.createNamespacedConfigMap({
        namespace: 'bulk',
        body: { metadata: { name, labels: { tier } } },
      });
    }
    await h.core.deleteCollectionNamespacedConfigMap({ namespace: 'bulk', labelSelector: 'tier=x' });
    expect(
      (await h.core.listNamespacedConfigMap({ namespace: 'bulk' })).items.map((c) => c.metadata?.name),
    ).toEqual(['c']);
  });
});

describe('dryRun=All', () => {
  it('checks and answers but stores nothing', async () => {
    const before = h.ctx.store.resourceVersion;
    const created = await h.core.createNamespacedConfigMap({
      namespace: 'default',
      dryRun: 'All',
      body: { metadata: { name: 'dry' }, data: { a: '1' } },
    });
    expect(created.metadata?.uid).toBeTruthy();
    expect((await failure(h.core.readNamespacedConfigMap({ namespace: 'default', name: 'dry' }))).code).toBe(
      404,
    );

    const real = await h.core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'dry' }, data: { a: '1' } },
    });
    const dup = await failure(
      h.core.createNamespacedConfigMap({
        namespace: 'default',
        dryRun: 'All',
        body: { metadata: { name: 'dry' } },
      }),
    );
    expect(dup.code).toBe(409);

    const rv = h.ctx.store.resourceVersion;
    const updated = await h.core.replaceNamespacedConfigMap({
      namespace: 'default',
      name: 'dry',
      dryRun: 'All',
      body: { ...real, data: { a: '2' } },
    });
    expect(updated.data).toEqual({ a: '2' });
    await h.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'dry', dryRun: 'All' });
    expect((await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'dry' })).data).toEqual({
      a: '1',
    });
    expect(h.ctx.store.resourceVersion).toBe(rv);
    expect(rv).toBe(before + 1);
  });

  it('422 for a dryRun value other than All', async () => {
    const res = await h.fetch('/api/v1/namespaces/default/configmaps?dryRun=Some', {
      method: 'POST',
      headers: JSON_BODY,
      body: JSON.stringify({ metadata: { name: 'x' } }),
    });
    expect([res.status, (await json(res)).reason]).toEqual([422, 'Invalid']);
  });
});

describe('paths and methods', () => {
  it('404 NotFound for paths it does not serve', async () => {
    for (const p of [
      '/nope',
      '/api/v2/pods',
      '/api/v1/widgets',
      '/apis/apps/v1/namespaces/default/pods',
      '/api/v1/pods/x',
    ]) {
      const res = await h.fetch(p);
      expect(res.status, p).toBe(404);
      expect(await json(res)).toMatchObject({
        kind: 'Status',
        reason: 'NotFound',
        message: 'the server could not find the requested resource',
      });
    }
  });

  it('405 MethodNotAllowed for a verb the path does not have', async () => {
    for (const [method, p] of [
      ['POST', '/api/v1/pods'],
      ['PUT', '/api/v1/namespaces/default/configmaps'],
      ['POST', '/api/v1/namespaces/default/configmaps/x'],
      ['DELETE', '/api/v1/namespaces/default/pods/x/status'],
    ] as const) {
      const res = await h.fetch(p, { method, headers: JSON_BODY, body: '{}' });
      expect(res.status, `${method} ${p}`).toBe(405);
      expect((await json(res)).reason).toBe('MethodNotAllowed');
    }
  });

  it('500 InternalError for an unexpected failure, and keeps serving', async () => {
    const spy = vi.spyOn(h.ctx.store, 'list').mockImplementationOnce(() => {
      throw new Error('disk on fire');
    });
    const { code, status } = await failure(h.core.listNamespacedConfigMap({ namespace: 'default' }));
    spy.mockRestore();
    expect([code, status.reason, status.message]).toEqual([
      500,
      'InternalError',
      'Internal error occurred: disk on fire',
    ]);
    expect((await h.core.listNamespacedConfigMap({ namespace: 'default' })).items.length).toBeGreaterThan(0);
  });
});
