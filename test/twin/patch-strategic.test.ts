import { describe, expect, it } from 'vitest';
import { StatusError } from '../../lib/twin/errors.ts';
import { applyPatch } from '../../lib/twin/patch/index.ts';
import { resourceType } from '../../lib/twin/resources.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import { deployment, frozen, node, pod } from './patch-fixtures.ts';

const DEPLOYMENTS = resourceType('deployments.apps');
const NODES = resourceType('nodes');
const PODS = resourceType('pods');
const SERVICES = resourceType('services');

interface Container {
  name: string;
  image?: string;
  env?: { name: string; value?: string }[];
  ports?: { containerPort: number; protocol?: string; name?: string }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  args?: string[];
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string; [k: string]: unknown }[];
  tolerations?: unknown[];
}
const podSpec = (obj: KubeObject): PodSpec => (obj.spec as { template: { spec: PodSpec } }).template.spec;
const smp = (patch: unknown, current = deployment()): KubeObject =>
  applyPatch(DEPLOYMENTS, current, 'strategic', patch);
const template = (spec: unknown) => ({ spec: { template: { spec } } });

function statusOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
  throw new Error('expected a StatusError');
}

describe('strategic merge patch: merge lists', () => {
  it('merges containers by name, keeping server-only items and the patch order', () => {
    const out = smp(
      template({
        containers: [
          { name: 'sidecar', image: 'busybox:1.37' },
          { name: 'cloud-controller-manager', image: 'ccm:1.27' },
        ],
      }),
    );
    const containers = podSpec(out).containers;
    expect(containers.map((c) => [c.name, c.image])).toEqual([
      ['nginx', 'nginx:1.25'],
      ['sidecar', 'busybox:1.37'],
      ['cloud-controller-manager', 'ccm:1.27'],
    ]);
    expect(containers[1]?.args).toEqual(['sleep', '3600']);
  });

  it('merges env by name, ports by containerPort and volumeMounts by mountPath inside a container', () => {
    const out = smp(
      template({
        containers: [
          {
            name: 'nginx',
            env: [
              { name: 'B', value: 'two' },
              { name: 'C', value: '3' },
            ],
            ports: [{ containerPort: 80, name: 'http' }],
            volumeMounts: [{ mountPath: '/etc/nginx', name: 'conf', readOnly: true }],
          },
        ],
      }),
    );
    const nginx = podSpec(out).containers[0] as Container;
    expect(nginx.env).toEqual([
      { name: 'A', value: '1' },
      { name: 'B', value: 'two' },
      { name: 'C', value: '3' },
    ]);
    expect(nginx.ports).toEqual([{ containerPort: 80, protocol: 'TCP', name: 'http' }]);
    expect(nginx.volumeMounts).toEqual([{ name: 'conf', mountPath: '/etc/nginx', readOnly: true }]);
    expect(nginx.image).toBe('nginx:1.25');
  });

  it('merges volumes by name but replaces tolerations, which are not a merge list', () => {
    const out = smp(
      template({
        volumes: [{ name: 'extra', emptyDir: {} }],
        tolerations: [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', operator: 'Exists' }],
      }),
    );
    expect(podSpec(out).volumes?.map((v) => v.name)).toEqual(['extra', 'conf']);
    expect(podSpec(out).tolerations).toEqual([
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', operator: 'Exists' },
    ]);
  });

  it('merges Node status conditions and addresses by type, and replaces node taints', () => {
    const out = applyPatch(NODES, node(), 'strategic', {
      spec: { taints: [] },
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        addresses: [{ type: 'ExternalIP', address: '54.1.2.3' }],
      },
    });
    const status = out.status as {
      conditions: { type: string; status: string }[];
      addresses: { type: string }[];
    };
    expect(status.conditions).toEqual([
      { type: 'MemoryPressure', status: 'False' },
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    ]);
    // Without $setElementOrder a new item goes before the server-only ones (mergeSortedSlice).
    expect(status.addresses.map((a) => a.type)).toEqual(['ExternalIP', 'InternalIP', 'Hostname']);
    expect((out.spec as { taints: unknown[] }).taints).toEqual([]);
  });

  it('merges Service ports by port', () => {
    const svc = frozen({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lb', namespace: 'default' },
      spec: {
        type: 'LoadBalancer',
        ports: [
          { port: 80, targetPort: 8080, protocol: 'TCP' },
          { port: 443, targetPort: 8443, protocol: 'TCP' },
        ],
      },
    });
    const out = applyPatch(SERVICES, svc, 'strategic', { spec: { ports: [{ port: 443, nodePort: 30443 }] } });
    expect((out.spec as { ports: unknown[] }).ports).toEqual([
      { port: 80, targetPort: 8080, protocol: 'TCP' },
      { port: 443, targetPort: 8443, protocol: 'TCP', nodePort: 30443 },
    ]);
  });

  it('merges ownerReferences by uid and finalizers as a set', () => {
    const out = applyPatch(PODS, pod(), 'strategic', {
      metadata: {
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'cp-1', uid: 'node-uid' }],
        finalizers: ['a', 'b', 'a'],
      },
    });
    expect(out.metadata.ownerReferences?.map((o) => o.uid)).toEqual(['node-uid', 'job-uid-1']);
    expect(out.metadata.finalizers).toEqual(['a', 'b']);
    const again = applyPatch(PODS, out, 'strategic', { metadata: { finalizers: ['b', 'c'] } });
    expect(again.metadata.finalizers).toEqual(['a', 'b', 'c']);
  });

  it('merges Pod status conditions by type', () => {
    const out = applyPatch(PODS, pod(), 'strategic', {
      status: { conditions: [{ type: 'PodScheduled', status: 'True' }] },
    });
    expect((out.status as { conditions: { type: string }[] }).conditions.map((c) => c.type)).toEqual([
      'PodScheduled',
      'Ready',
    ]);
  });
});

describe('strategic merge patch: directives', () => {
  it('null deletes a key', () => {
    const out = smp({ metadata: { labels: { app: null } }, spec: { replicas: null } });
    expect(out.metadata.labels).toEqual({});
    expect(out.spec).not.toHaveProperty('replicas');
  });

  it('$patch: delete removes list items by merge key', () => {
    const out = smp(template({ containers: [{ name: 'sidecar', $patch: 'delete' }] }));
    expect(podSpec(out).containers.map((c) => c.name)).toEqual(['nginx']);
  });

  it('$patch: replace in a list replaces the whole list', () => {
    const out = smp(template({ containers: [{ name: 'solo', image: 'solo:1' }, { $patch: 'replace' }] }));
    expect(podSpec(out).containers).toEqual([{ name: 'solo', image: 'solo:1' }]);
  });

  it('$patch: replace in a map replaces the map, $patch: delete empties it', () => {
    const replaced = smp({ metadata: { labels: { $patch: 'replace', tier: 'web' } } });
    expect(replaced.metadata.labels).toEqual({ tier: 'web' });
    const deleted = smp({ metadata: { labels: { $patch: 'delete' } } });
    expect(deleted.metadata.labels).toEqual({});
  });

  it('$deleteFromPrimitiveList removes values from a merged list of scalars', () => {
    const out = smp({ metadata: { '$deleteFromPrimitiveList/finalizers': ['example.com/a'] } });
    expect(out.metadata.finalizers).toEqual([]);
  });

  it('$setElementOrder orders the merged list', () => {
    const out = smp(
      template({
        '$setElementOrder/containers': [{ name: 'sidecar' }, { name: 'nginx' }],
        containers: [{ name: 'nginx', image: 'nginx:1.27' }],
      }),
    );
    expect(podSpec(out).containers.map((c) => [c.name, c.image])).toEqual([
      ['sidecar', 'busybox:1.36'],
      ['nginx', 'nginx:1.27'],
    ]);
  });

  it('$retainKeys clears the keys it does not list', () => {
    const out = smp(
      template({ volumes: [{ name: 'conf', $retainKeys: ['name', 'secret'], secret: { secretName: 's' } }] }),
    );
    expect(podSpec(out).volumes).toEqual([{ name: 'conf', secret: { secretName: 's' } }]);
  });

  it('lists the schema does not declare are replaced', () => {
    const out = smp(template({ containers: [{ name: 'sidecar', args: ['sleep', '1'] }] }));
    expect(podSpec(out).containers[1]?.args).toEqual(['sleep', '1']);
  });

  it('ignores an attempt to change the kind, as decoding into the typed object does', () => {
    expect(smp({ kind: 'Pod' }).kind).toBe('Deployment');
  });
});

describe('strategic merge patch: errors', () => {
  it('a $retainKeys list that is not a list, or misses a patched key, is a 400', () => {
    const notList = statusOf(() => smp(template({ volumes: [{ name: 'conf', $retainKeys: 'name' }] })));
    expect([notList.code, notList.message]).toEqual([400, 'invalid patch format of retainKeys']);
    const missing = statusOf(() =>
      smp(template({ volumes: [{ name: 'conf', $retainKeys: ['name'], secret: { secretName: 's' } }] })),
    );
    expect(missing.code).toBe(400);
  });

  it('a list of lists is a 422', () => {
    const current = frozen({ ...deployment(), metadata: { ...deployment().metadata, finalizers: [] } });
    const err = statusOf(() => smp({ metadata: { finalizers: [['a']] } }, current));
    expect([err.code, err.reason]).toEqual([422, 'Invalid']);
  });

  it('a merge-list item without its merge key, or an unknown directive, is a 500 as real', () => {
    const noKey = statusOf(() => smp(template({ containers: [{ image: 'x' }] })));
    expect(noKey.code).toBe(500);
    expect(noKey.message).toBe('map: map[image:x] does not contain declared merge key: name');
    const unknown = statusOf(() => smp({ metadata: { labels: { $patch: 'merge-it' } } }));
    expect(unknown.code).toBe(500);
    expect(unknown.message).toMatch(/^unknown patch type: merge-it in map:/);
  });

  it('a patch that is not an object is a 400; a null patch changes nothing', () => {
    expect(statusOf(() => smp([1])).code).toBe(400);
    expect(smp(null)).toEqual(deployment());
  });

  it('a $setElementOrder that contradicts the patch list is refused', () => {
    const err = statusOf(() =>
      smp(
        template({
          '$setElementOrder/containers': [{ name: 'nginx' }],
          containers: [{ name: 'sidecar', image: 'x' }],
        }),
      ),
    );
    expect(err.code).toBe(500);
  });
});
