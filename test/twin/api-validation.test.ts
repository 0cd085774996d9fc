/**
 * What the API server refuses or drops before storing, as the real one does (the differential suite holds
 * these to a real kube-apiserver): names by each type's rule, unknown fields per fieldValidation, and the
 * workload rules (replicas, a selector that selects its template and never changes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiHarness, json, startApiHarness } from './api-harness.ts';

const JSON_BODY = { 'Content-Type': 'application/json' };
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h.stop();
});

const post = (p: string, body: unknown, headers: Record<string, string> = JSON_BODY) =>
  h.fetch(p, { method: 'POST', headers, body: JSON.stringify(body) });

function deployment(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      ...spec,
    },
  };
}

describe('validation the API server does', () => {
  it('refuses a name its type does not allow, and takes RBAC names with a colon', async () => {
    const bad = await post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'Not_Valid' } });
    expect(bad.status).toBe(422);
    const body = await json(bad);
    expect(body.reason).toBe('Invalid');
    expect(body.message).toMatch(
      /^ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain/,
    );
    const service = await post('/api/v1/namespaces/default/services', {
      metadata: { name: '1svc' },
      spec: { ports: [{ port: 80 }] },
    });
    expect((await json(service)).message).toContain('a DNS-1035 label');
    const role = await post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: 'system:ccm' },
      rules: [],
    });
    expect(role.status).toBe(201);
  });

  it('refuses unknown fields under Strict, and drops them with a warning otherwise', async () => {
    const strict = await post('/api/v1/namespaces/default/configmaps?fieldValidation=Strict', {
      metadata: { name: 'strict', bogus: 1 },
      nonsense: true,
    });
    expect(strict.status).toBe(400);
    expect((await json(strict)).message).toBe(
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.bogus", unknown field "nonsense"',
    );
    const warned = await post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'warned' },
      nonsense: true,
    });
    expect(warned.status).toBe(201);
    expect(warned.headers.get('warning')).toBe('299 - "unknown field \\"nonsense\\""');
    expect(await json(warned)).not.toHaveProperty('nonsense');
    const nested = await post('/apis/apps/v1/namespaces/default/deployments?fieldValidation=Strict', {
      ...deployment('nested'),
      spec: {
        ...deployment('nested').spec,
        template: {
          metadata: { labels: { app: 'nested' } },
          spec: { containers: [{ name: 'c', image: 'x', bogus: 2 }] },
        },
      },
    });
    expect((await json(nested)).message).toContain('unknown field "spec.template.spec.containers[0].bogus"');
  });

  it('refuses negative replicas, a selector that misses its template, and a changed selector', async () => {
    const negative = await json(
      await post('/apis/apps/v1/namespaces/default/deployments', deployment('neg', { replicas: -1 })),
    );
    expect(negative.details.causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'spec.replicas',
        message: 'Invalid value: -1: must be greater than or equal to 0',
      },
    ]);
    const misses = deployment('misses');
    misses.spec.template.metadata.labels = { app: 'other' };
    expect(
      (await json(await post('/apis/apps/v1/namespaces/default/deployments', misses))).details.causes[0]
        .field,
    ).toBe('spec.template.metadata.labels');
    const created = await json(
      await post('/apis/apps/v1/namespaces/default/deployments', deployment('moved')),
    );
    const moved = {
      ...created,
      spec: {
        ...created.spec,
        selector: { matchLabels: { app: 'else' } },
        template: { ...created.spec.template, metadata: { labels: { app: 'else' } } },
      },
    };
    const res = await h.fetch('/apis/apps/v1/namespaces/default/deployments/moved', {
      method: 'PUT',
      headers: JSON_BODY,
      body: JSON.stringify(moved),
    });
    expect(res.status).toBe(422);
    expect((await json(res)).message).toContain(
      'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"else"}',
    );
  });
});
