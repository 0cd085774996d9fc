import { describe, expect, it } from 'vitest';
import { StatusError } from '../../lib/twin/errors.ts';
import { applyPatch, patchTypeOf } from '../../lib/twin/patch/index.ts';
import { resourceType } from '../../lib/twin/resources.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import { deployment } from './patch-fixtures.ts';

const DEPLOYMENTS = resourceType('deployments.apps');

function statusOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
  throw new Error('expected a StatusError');
}

type Spec = { replicas: number; template: { spec: { containers: { name: string; image: string }[] } } };
const spec = (obj: KubeObject): Spec => obj.spec as Spec;

describe('patchTypeOf', () => {
  it('maps the four patch media types and ignores parameters', () => {
    expect(patchTypeOf('application/json-patch+json')).toBe('json');
    expect(patchTypeOf('application/merge-patch+json; charset=utf-8')).toBe('merge');
    expect(patchTypeOf('Application/Strategic-Merge-Patch+JSON')).toBe('strategic');
    expect(patchTypeOf('application/apply-patch+yaml')).toBe('apply');
  });

  it('rejects anything else', () => {
    expect(patchTypeOf('application/json')).toBeUndefined();
    expect(patchTypeOf('application/apply-patch+cbor')).toBeUndefined();
    expect(patchTypeOf(undefined)).toBeUndefined();
  });
});

describe('JSON patch', () => {
  it('applies the operations to a copy, leaving the frozen original alone', () => {
    const current = deployment();
    const out = applyPatch(DEPLOYMENTS, current, 'json', [
      { op: 'test', path: '/spec/replicas', value: 2 },
      { op: 'replace', path: '/spec/replicas', value: 5 },
      { op: 'add', path: '/metadata/labels/tier', value: 'frontend' },
      { op: 'remove', path: '/spec/template/spec/containers/1' },
    ]);
    expect(spec(out).replicas).toBe(5);
    expect(out.metadata.labels).toEqual({ app: 'web', tier: 'frontend' });
    expect(spec(out).template.spec.containers.map((c) => c.name)).toEqual(['nginx']);
    expect(spec(current).replicas).toBe(2);
    expect(Object.isFrozen(out)).toBe(false);
  });

  it('answers a failed test operation with the generic 422 Invalid of the real server', () => {
    const err = statusOf(() =>
      applyPatch(DEPLOYMENTS, deployment(), 'json', [{ op: 'test', path: '/spec/replicas', value: 3 }]),
    );
    expect(err.code).toBe(422);
    expect(err.reason).toBe('Invalid');
    expect(err.message).toBe('the server rejected our request due to an error in our request');
  });

  it('answers an operation on a missing path with 422', () => {
    const err = statusOf(() =>
      applyPatch(DEPLOYMENTS, deployment(), 'json', [{ op: 'remove', path: '/spec/template/spec/affinity' }]),
    );
    expect([err.code, err.reason]).toEqual([422, 'Invalid']);
  });

  it('answers a document that is not a list of operations with 400', () => {
    const notList = statusOf(() => applyPatch(DEPLOYMENTS, deployment(), 'json', { op: 'remove' }));
    expect([notList.code, notList.reason]).toEqual([400, 'BadRequest']);
    expect(notList.message).toBe('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
    const notOps = statusOf(() => applyPatch(DEPLOYMENTS, deployment(), 'json', ['remove']));
    expect(notOps.code).toBe(400);
  });

  it('refuses to rename the object or change its kind', () => {
    const rename = statusOf(() =>
      applyPatch(DEPLOYMENTS, deployment(), 'json', [
        { op: 'replace', path: '/metadata/name', value: 'other' },
      ]),
    );
    expect(rename.code).toBe(400);
    expect(rename.message).toBe('the name of the object (other) does not match the name on the URL (web)');
    const kind = statusOf(() =>
      applyPatch(DEPLOYMENTS, deployment(), 'json', [{ op: 'replace', path: '/kind', value: 'DaemonSet' }]),
    );
    expect([kind.code, kind.reason]).toEqual([422, 'Invalid']);
    expect(kind.details?.causes?.[0]?.field).toBe('patch');
  });

  it('restores apiVersion and kind that a patch removed, as decoding into the type does', () => {
    const out = applyPatch(DEPLOYMENTS, deployment(), 'json', [{ op: 'remove', path: '/kind' }]);
    expect(out.kind).toBe('Deployment');
  });
});

describe('JSON merge patch', () => {
  it('merges objects, deletes on null and replaces lists', () => {
    const out = applyPatch(DEPLOYMENTS, deployment(), 'merge', {
      metadata: { labels: { app: null, tier: 'web' } },
      spec: { replicas: 3, template: { spec: { containers: [{ name: 'only', image: 'x' }] } } },
    });
    expect(out.metadata.labels).toEqual({ tier: 'web' });
    expect(spec(out).replicas).toBe(3);
    expect(spec(out).template.spec.containers).toEqual([{ name: 'only', image: 'x' }]);
    expect((out.spec as { selector: unknown }).selector).toEqual({ matchLabels: { app: 'web' } });
  });

  it('drops nulls inside newly added objects', () => {
    const out = applyPatch(DEPLOYMENTS, deployment(), 'merge', {
      metadata: { annotations: { a: 'x', b: null } },
    });
    expect(out.metadata.annotations).toEqual({ a: 'x' });
  });

  it('answers a null patch with 400 and a non-object patch with 422', () => {
    const nullPatch = statusOf(() => applyPatch(DEPLOYMENTS, deployment(), 'merge', null));
    expect([nullPatch.code, nullPatch.message]).toEqual([400, 'Invalid JSON Patch']);
    const listPatch = statusOf(() => applyPatch(DEPLOYMENTS, deployment(), 'merge', [1, 2]));
    expect([listPatch.code, listPatch.reason]).toEqual([422, 'Invalid']);
  });

  it('keeps the namespace of the request', () => {
    const moved = statusOf(() =>
      applyPatch(DEPLOYMENTS, deployment(), 'merge', { metadata: { namespace: 'kube-system' } }),
    );
    expect(moved.code).toBe(400);
    const cleared = applyPatch(DEPLOYMENTS, deployment(), 'merge', { metadata: { namespace: null } });
    expect(cleared.metadata.namespace).toBe('default');
  });
});
