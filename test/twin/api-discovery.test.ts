/**
 * Discovery, health and OpenAPI endpoints, read with the real client where it has an API for them.
 */
import { ApisApi, AppsV1Api, CoreApi, VersionApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_TYPES } from '../../lib/twin/resources.ts';
import { type ApiHarness, json, startApiHarness } from './api-harness.ts';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(() => h.stop());

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

describe('discovery', () => {
  it('/version reports the spec version', async () => {
    const v = await h.kc.makeApiClient(VersionApi).getCode();
    expect(v).toMatchObject({ gitVersion: 'v1.26.15', major: '1', minor: '26' });
    expect(v.platform).toMatch(/^linux\//);
  });

  it('/api and /apis list the core version and every named group', async () => {
    expect((await h.kc.makeApiClient(CoreApi).getAPIVersions()).versions).toEqual(['v1']);
    const groups = await h.kc.makeApiClient(ApisApi).getAPIVersions();
    const expected = [
      ...new Set(RESOURCE_TYPES.filter((t) => t.group).map((t) => `${t.group}/${t.version}`)),
      // SelfSubjectAccessReview (kubectl auth can-i): served, stored nowhere.
      'authorization.k8s.io/v1',
    ];
    expect(groups.groups.map((g) => g.preferredVersion?.groupVersion).sort()).toEqual(expected.sort());
  });

  it('/api/v1 and /apis/<g>/<v> list resources with verbs, names and status subresources', async () => {
    const core = await h.core.getAPIResources();
    const pods = core.resources.find((r) => r.name === 'pods');
    expect(pods).toMatchObject({ kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: ['po'] });
    expect(pods?.verbs).toEqual(
      expect.arrayContaining(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']),
    );
    expect(core.resources.find((r) => r.name === 'pods/status')?.verbs).toEqual(['get', 'patch', 'update']);
    expect(core.resources.find((r) => r.name === 'nodes')?.namespaced).toBe(false);
    const apps = await h.kc.makeApiClient(AppsV1Api).getAPIResources();
    expect(apps.groupVersion).toBe('apps/v1');
    expect(apps.resources.map((r) => r.name).sort()).toEqual([
      'daemonsets',
      'daemonsets/status',
      'deployments',
      'deployments/scale',
      'deployments/status',
    ]);
    expect(apps.resources.find((r) => r.name === 'deployments/scale')).toMatchObject({
      group: 'autoscaling',
      version: 'v1',
      kind: 'Scale',
    });
    expect((await h.fetch('/apis/apps/v2')).status).toBe(404);
  });

  it('serves aggregated discovery when asked for it', async () => {
    for (const [path, groups] of [
      ['/api', ['']],
      [
        '/apis',
        [...new Set(RESOURCE_TYPES.filter((t) => t.group).map((t) => t.group)), 'authorization.k8s.io'],
      ],
    ] as const) {
      const res = await h.fetch(path, { headers: { Accept: `${AGGREGATED},application/json` } });
      expect(res.headers.get('content-type')).toBe(AGGREGATED);
      const body = await json(res);
      expect(body.kind).toBe('APIGroupDiscoveryList');
      expect(body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(groups);
    }
    const core = await json(await h.fetch('/api', { headers: { Accept: AGGREGATED } }));
    const pods = core.items[0].versions[0].resources.find((r: { resource: string }) => r.resource === 'pods');
    expect(pods).toMatchObject({
      scope: 'Namespaced',
      singularResource: 'pod',
      responseKind: { group: '', version: 'v1', kind: 'Pod' },
      subresources: [{ subresource: 'status' }],
    });
  });

  it('answers plain JSON to a client that does not ask for aggregated discovery', async () => {
    const res = await h.fetch('/apis', { headers: { Accept: 'application/json' } });
    expect(res.headers.get('content-type')).toBe('application/json');
    expect((await json(res)).kind).toBe('APIGroupList');
  });
});

describe('health and OpenAPI', () => {
  it('/healthz, /livez and /readyz answer ok', async () => {
    for (const path of ['/healthz', '/livez', '/readyz', '/readyz?verbose']) {
      const res = await h.fetch(path);
      expect([res.status, await res.text()]).toEqual([200, 'ok']);
    }
  });

  it('/openapi/v3 declares server-side field validation for every type', async () => {
    const root = await json(await h.fetch('/openapi/v3'));
    expect(Object.keys(root.paths)).toEqual(
      expect.arrayContaining(['api/v1', 'apis/apps/v1', 'apis/coordination.k8s.io/v1']),
    );
    const doc = await json(await h.fetch(root.paths['apis/apps/v1'].serverRelativeURL));
    const patch = doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch;
    expect(patch['x-kubernetes-group-version-kind']).toEqual({
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
    });
    expect(patch.parameters.map((p: { name: string }) => p.name)).toContain('fieldValidation');
    expect((await h.fetch('/openapi/v3/apis/nope/v1')).status).toBe(404);
  });
});
