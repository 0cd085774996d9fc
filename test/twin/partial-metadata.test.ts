/**
 * Metadata-only reads: a GET whose Accept asks for PartialObjectMetadata gets the object's metadata and
 * nothing else (a Secret's data never leaves the server), a list asked PartialObjectMetadataList one such
 * item per object, and plain JSON stays as it was; readSecretMetadata asks that way through the real client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARTIAL_OBJECT_METADATA, readSecretMetadata } from '../../lib/kube/metadata.ts';
import { type ApiHarness, json, startApiHarness } from './api-harness.ts';

const CLOUDS_YAML = 'password: fake-not-a-real-secret';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
  await h.core.createNamespacedSecret({
    namespace: 'default',
    body: {
      metadata: { name: 'creds', labels: { app: 'ccm' }, annotations: { note: 'kept' } },
      data: { 'clouds.yaml': Buffer.from(CLOUDS_YAML).toString('base64') },
    },
  });
  await h.core.createNamespacedSecret({
    namespace: 'default',
    body: {
      metadata: { name: 'other' },
      data: { token: Buffer.from('fake-token-value').toString('base64') },
    },
  });
});
afterAll(() => h.stop());

const SECRET_PATH = '/api/v1/namespaces/default/secrets';
const LIST_METADATA = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const accept = (value: string) => ({ headers: { Accept: value } });

describe('GET as PartialObjectMetadata', () => {
  it('answers a Secret with its metadata and none of its data', async () => {
    const res = await h.fetch(`${SECRET_PATH}/creds`, accept(PARTIAL_OBJECT_METADATA));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(PARTIAL_OBJECT_METADATA);
    const text = await res.text();
    expect(text).not.toContain(Buffer.from(CLOUDS_YAML).toString('base64'));
    expect(text).not.toMatch(/"(data|stringData|type)"/);
    const body = JSON.parse(text);
    expect(Object.keys(body).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
    expect(body).toMatchObject({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: {
        name: 'creds',
        namespace: 'default',
        labels: { app: 'ccm' },
        annotations: { note: 'kept' },
      },
    });
    expect(body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(body.metadata.creationTimestamp).toBeTypeOf('string');
  });

  it('is a 404 Status for an object that is not there', async () => {
    const res = await h.fetch(`${SECRET_PATH}/absent`, accept(PARTIAL_OBJECT_METADATA));
    expect(res.status).toBe(404);
    expect(await json(res)).toMatchObject({ kind: 'Status', reason: 'NotFound' });
  });

  it('serves any resource, and meta.k8s.io/v1beta1 when asked', async () => {
    const res = await h.fetch(
      '/api/v1/namespaces/default',
      accept(PARTIAL_OBJECT_METADATA.replace('v=v1', 'v=v1beta1')),
    );
    expect(res.headers.get('content-type')).toContain('v=v1beta1');
    const body = await json(res);
    expect(body).toMatchObject({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1beta1' });
    expect(body.metadata.name).toBe('default');
    expect(body.spec).toBeUndefined();
    expect(body.status).toBeUndefined();
  });

  it('leaves plain JSON as it was, and falls back to it past renderings it does not serve', async () => {
    const plain = await h.core.readNamespacedSecret({ namespace: 'default', name: 'creds' });
    expect(plain.data?.['clouds.yaml']).toBeDefined();
    // kubectl asks for a Table first, then JSON.
    const res = await h.fetch(
      `${SECRET_PATH}/creds`,
      accept('application/json;as=Table;v=v1;g=meta.k8s.io,application/json'),
    );
    expect(res.headers.get('content-type')).toBe('application/json');
    expect((await json(res)).kind).toBe('Secret');
  });

  it('refuses, 406, an Accept with nothing it can serve (a list’s rendering for one object)', async () => {
    const res = await h.fetch(`${SECRET_PATH}/creds`, accept(LIST_METADATA));
    expect(res.status).toBe(406);
    expect(await json(res)).toMatchObject({ kind: 'Status', reason: 'NotAcceptable', code: 406 });
  });
});

describe('list as PartialObjectMetadataList', () => {
  it('answers one metadata-only item per object, keeping the list’s resourceVersion', async () => {
    const res = await h.fetch(SECRET_PATH, accept(LIST_METADATA));
    expect(res.headers.get('content-type')).toBe(LIST_METADATA);
    const text = await res.text();
    expect(text).not.toContain('"data"');
    const body = JSON.parse(text);
    expect(body).toMatchObject({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1' });
    expect(body.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(
      body.items.map((i: { kind: string; metadata: { name: string } }) => [i.kind, i.metadata.name]),
    ).toEqual([
      ['PartialObjectMetadata', 'creds'],
      ['PartialObjectMetadata', 'other'],
    ]);
  });
});

describe('readSecretMetadata', () => {
  it('returns a Secret’s metadata through the real client, and undefined for one that is not there', async () => {
    const meta = await readSecretMetadata(h, { namespace: 'default', name: 'creds' });
    expect(meta).toMatchObject({ name: 'creds', namespace: 'default', labels: { app: 'ccm' } });
    expect(JSON.stringify(meta)).not.toContain(Buffer.from(CLOUDS_YAML).toString('base64'));
    expect(await readSecretMetadata(h, { namespace: 'default', name: 'absent' })).toBeUndefined();
  });

  it('throws the named error for any other failure', async () => {
    h.setAvailable(false);
    try {
      await expect(readSecretMetadata(h, { namespace: 'default', name: 'creds' })).rejects.toMatchObject({
        name: 'ClusterUnreachable',
      });
    } finally {
      h.setAvailable(true);
    }
  });
});
