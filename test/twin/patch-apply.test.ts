import { describe, expect, it } from 'vitest';
import { StatusError } from '../../lib/twin/errors.ts';
import { recordUpdate, serverSideApply } from '../../lib/twin/patch/index.ts';
import { resourceType } from '../../lib/twin/resources.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import { deployment, frozen, node } from './patch-fixtures.ts';

const DEPLOYMENTS = resourceType('deployments.apps');
const DAEMONSETS = resourceType('daemonsets.apps');
const NODES = resourceType('nodes');
const T0 = new Date('2024-06-01T00:00:00Z');
const T1 = new Date('2024-06-01T00:05:00Z');

interface Entry {
  manager: string;
  operation: string;
  apiVersion: string;
  time?: string;
  fieldsType: string;
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}
const entries = (obj: KubeObject): Entry[] => (obj.metadata.managedFields ?? []) as Entry[];
const entry = (obj: KubeObject, manager: string): Entry | undefined =>
  entries(obj).find((e) => e.manager === manager);

/** What the store adds on create: the tests feed results back as the stored, frozen object. */
function stored(obj: KubeObject, resourceVersion = '1'): KubeObject {
  return frozen({
    ...structuredClone(obj),
    metadata: {
      ...structuredClone(obj.metadata),
      uid: 'uid-1',
      resourceVersion,
      creationTimestamp: '2024-06-01T00:00:00Z',
      generation: 1,
    },
  });
}

function ccmDaemonSet(overrides: { image?: string; args?: string[]; labels?: Record<string, string> } = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: 'aws-cloud-controller-manager',
      namespace: 'kube-system',
      labels: overrides.labels ?? { k8s: 'ccm' },
    },
    spec: {
      selector: { matchLabels: { k8s: 'ccm' } },
      template: {
        metadata: { labels: { k8s: 'ccm' } },
        spec: {
          tolerations: [
            { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
          ],
          containers: [
            {
              name: 'aws-cloud-controller-manager',
              image: overrides.image ?? 'registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1',
              args: overrides.args ?? ['--v=2', '--cloud-provider=aws'],
              ports: [{ containerPort: 10258 }],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

const apply = (
  current: KubeObject | undefined,
  applied: KubeObject,
  fieldManager = 'ccm-migrate',
  force = false,
) => serverSideApply({ type: DAEMONSETS, current, applied, fieldManager, force, now: T0 });

type DsSpec = { template: { spec: { containers: { name: string; image: string; args?: string[] }[] } } };
const containers = (obj: KubeObject) => (obj.spec as DsSpec).template.spec.containers;

function statusOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
  throw new Error('expected a StatusError');
}

describe('server-side apply: ownership', () => {
  it('creates the object and records the applied fields in the FieldsV1 encoding', () => {
    const created = apply(undefined, ccmDaemonSet());
    expect(containers(created)[0]?.image).toContain('v1.27.1');
    expect(entries(created)).toEqual([
      {
        manager: 'ccm-migrate',
        operation: 'Apply',
        apiVersion: 'apps/v1',
        time: '2024-06-01T00:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': { 'f:labels': { 'f:k8s': {} } },
          'f:spec': {
            'f:selector': {},
            'f:template': {
              'f:metadata': { 'f:labels': { 'f:k8s': {} } },
              'f:spec': {
                'f:containers': {
                  'k:{"name":"aws-cloud-controller-manager"}': {
                    '.': {},
                    'f:args': {},
                    'f:image': {},
                    'f:name': {},
                    'f:ports': {
                      'k:{"containerPort":10258,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} },
                    },
                  },
                },
                'f:tolerations': {},
              },
            },
          },
        },
      },
    ]);
  });

  it('makes a repeated identical apply a true no-op', () => {
    const current = stored(apply(undefined, ccmDaemonSet()));
    const again = serverSideApply({
      type: DAEMONSETS,
      current,
      applied: ccmDaemonSet(),
      fieldManager: 'ccm-migrate',
      force: false,
      now: T1,
    });
    expect(JSON.stringify(again)).toBe(JSON.stringify(current));
  });

  it('updates the apply time when the object changes', () => {
    const current = stored(apply(undefined, ccmDaemonSet()));
    const next = serverSideApply({
      type: DAEMONSETS,
      current,
      applied: ccmDaemonSet({ image: 'ccm:v1.28.0' }),
      fieldManager: 'ccm-migrate',
      force: false,
      now: T1,
    });
    expect(containers(next)[0]?.image).toBe('ccm:v1.28.0');
    expect(entry(next, 'ccm-migrate')?.time).toBe('2024-06-01T00:05:00Z');
    expect(next.metadata.uid).toBe('uid-1');
  });

  it('removes fields the manager applied before and no longer applies', () => {
    const current = stored(apply(undefined, ccmDaemonSet({ labels: { k8s: 'ccm', tier: 'cp' } })));
    const next = apply(current, ccmDaemonSet({ labels: { k8s: 'ccm' } }));
    expect(next.metadata.labels).toEqual({ k8s: 'ccm' });
    const dropped = apply(stored(next, '2'), {
      ...ccmDaemonSet(),
      metadata: { name: 'aws-cloud-controller-manager' },
    });
    expect(dropped.metadata).not.toHaveProperty('labels');
  });

  it('keeps a field another manager also owns when the applier stops applying it', () => {
    const mine = stored(apply(undefined, ccmDaemonSet({ labels: { k8s: 'ccm', tier: 'cp' } })));
    const labelOnly = {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'aws-cloud-controller-manager', labels: { tier: 'cp' } },
    } as KubeObject;
    const shared = stored(apply(mine, labelOnly, 'other'), '2');
    expect(entry(shared, 'other')?.fieldsV1).toEqual({ 'f:metadata': { 'f:labels': { 'f:tier': {} } } });
    const next = apply(shared, ccmDaemonSet({ labels: { k8s: 'ccm' } }));
    expect(next.metadata.labels).toEqual({ k8s: 'ccm', tier: 'cp' });
  });

  it('keeps fields nobody applied (set by plain updates) when pruning', () => {
    const mine = stored(apply(undefined, ccmDaemonSet()));
    const withAnnotation = recordUpdate({
      type: DAEMONSETS,
      current: mine,
      next: { ...mine, metadata: { ...mine.metadata, annotations: { note: 'x' } } },
      fieldManager: 'kubectl-annotate',
      now: T0,
    });
    const next = apply(stored(withAnnotation, '2'), ccmDaemonSet({ args: ['--v=4'] }));
    expect(next.metadata.annotations).toEqual({ note: 'x' });
    expect(containers(next)[0]?.args).toEqual(['--v=4']);
  });

  it('merges associative lists by key: a second manager adds its own container', () => {
    const mine = stored(apply(undefined, ccmDaemonSet()));
    const sidecar = {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'aws-cloud-controller-manager' },
      spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'busybox' }] } } },
    } as KubeObject;
    const next = apply(mine, sidecar, 'sidecar-injector');
    expect(containers(next).map((c) => c.name)).toEqual(['aws-cloud-controller-manager', 'sidecar']);
    expect(containers(next)[0]?.args).toEqual(['--v=2', '--cloud-provider=aws']);
  });
});

describe('server-side apply: conflicts', () => {
  function withUpdater(): KubeObject {
    const mine = stored(apply(undefined, ccmDaemonSet()));
    const edited = structuredClone(mine) as KubeObject;
    (containers(edited)[0] as { image: string }).image = 'patched:1';
    return stored(
      recordUpdate({
        type: DAEMONSETS,
        current: mine,
        next: edited,
        fieldManager: 'kubectl-client-side-apply',
        now: T0,
      }),
      '2',
    );
  }

  it('an update takes the fields it changes away from their owner', () => {
    const current = withUpdater();
    expect(entry(current, 'kubectl-client-side-apply')).toMatchObject({
      operation: 'Update',
      apiVersion: 'apps/v1',
      fieldsV1: {
        'f:spec': {
          'f:template': {
            'f:spec': { 'f:containers': { 'k:{"name":"aws-cloud-controller-manager"}': { 'f:image': {} } } },
          },
        },
      },
    });
    const applier = JSON.stringify(entry(current, 'ccm-migrate')?.fieldsV1);
    expect(applier).not.toContain('f:image');
    expect(applier).toContain('f:args');
  });

  it('applying a different value to a field another manager owns is a 409 with the real message', () => {
    const err = statusOf(() => apply(withUpdater(), ccmDaemonSet({ image: 'ccm:v1.28.0' })));
    expect(err.code).toBe(409);
    expect(err.reason).toBe('Conflict');
    const field = '.spec.template.spec.containers[name="aws-cloud-controller-manager"].image';
    expect(err.message).toBe(
      `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: ${field}`,
    );
    expect(err.details?.causes).toEqual([
      {
        reason: 'FieldManagerConflict',
        message: 'conflict with "kubectl-client-side-apply" using apps/v1',
        field,
      },
    ]);
  });

  it('applying the same value is no conflict and shares ownership', () => {
    const next = apply(withUpdater(), ccmDaemonSet({ image: 'patched:1' }));
    expect(JSON.stringify(entry(next, 'ccm-migrate')?.fieldsV1)).toContain('f:image');
    expect(entry(next, 'kubectl-client-side-apply')).toBeDefined();
  });

  it('with force the applier takes the field, and a manager left with nothing is dropped', () => {
    const next = apply(withUpdater(), ccmDaemonSet({ image: 'ccm:v1.28.0' }), 'ccm-migrate', true);
    expect(containers(next)[0]?.image).toBe('ccm:v1.28.0');
    expect(entry(next, 'kubectl-client-side-apply')).toBeUndefined();
    expect(JSON.stringify(entry(next, 'ccm-migrate')?.fieldsV1)).toContain('f:image');
  });

  it('lists several conflicts grouped by manager', () => {
    const current = stored(apply(undefined, ccmDaemonSet({ labels: { k8s: 'ccm', tier: 'cp' } }), 'helm'));
    const err = statusOf(() => apply(current, ccmDaemonSet({ labels: { k8s: 'other', tier: 'x' } })));
    expect(err.message).toBe(
      'Apply failed with 2 conflicts: conflicts with "helm":\n- .metadata.labels.k8s\n- .metadata.labels.tier',
    );
    expect(err.details?.causes?.map((c) => c.message)).toEqual([
      'conflict with "helm"',
      'conflict with "helm"',
    ]);
  });

  it('an object nobody tracked is owned by before-first-apply, so a differing value conflicts', () => {
    const untracked = frozen({ ...deployment(), metadata: { ...deployment().metadata } });
    const applied = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: { replicas: 3 },
    } as KubeObject;
    const err = statusOf(() =>
      serverSideApply({
        type: DEPLOYMENTS,
        current: untracked,
        applied,
        fieldManager: 'me',
        force: false,
        now: T0,
      }),
    );
    expect(err.message).toBe(
      'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas',
    );
    const same = serverSideApply({
      type: DEPLOYMENTS,
      current: untracked,
      applied: { ...applied, spec: { replicas: 2 } },
      fieldManager: 'me',
      force: false,
      now: T0,
    });
    expect(entries(same).map((e) => e.manager)).toEqual(['me', 'before-first-apply']);
  });
});

describe('server-side apply: subresources and scope', () => {
  it('ignores status applied through the main resource and owns it through the status subresource', () => {
    const n = stored(
      serverSideApply({
        type: NODES,
        current: undefined,
        applied: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: 'n1' },
          status: { phase: 'x' },
        } as KubeObject,
        fieldManager: 'kubelet',
        force: false,
        now: T0,
      }),
    );
    expect(n).not.toHaveProperty('status');
    const withStatus = serverSideApply({
      type: NODES,
      current: n,
      applied: {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'n1', labels: { ignored: 'yes' } },
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
      } as KubeObject,
      fieldManager: 'cloud-node-controller',
      force: false,
      subresource: 'status',
      now: T0,
    });
    expect(withStatus.status).toEqual({ addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] });
    expect(withStatus.metadata.labels).toBeUndefined();
    expect(entry(withStatus, 'cloud-node-controller')).toMatchObject({
      subresource: 'status',
      fieldsV1: {
        'f:status': {
          'f:addresses': { 'k:{"type":"InternalIP"}': { '.': {}, 'f:address': {}, 'f:type': {} } },
        },
      },
    });
  });
});

describe('server-side apply: bad requests', () => {
  it('refuses a body of another kind or version with 400', () => {
    const err = statusOf(() => apply(undefined, { ...ccmDaemonSet(), kind: 'Deployment' }));
    expect([err.code, err.message]).toEqual([400, 'invalid object type: apps/v1, Kind=Deployment']);
  });

  it('refuses managedFields in the applied body with 400', () => {
    const body = ccmDaemonSet();
    body.metadata.managedFields = [];
    expect(statusOf(() => apply(undefined, body)).message).toBe('metadata.managedFields must be nil');
  });

  it('requires a field manager (422 on PatchOptions)', () => {
    const err = statusOf(() => apply(undefined, ccmDaemonSet(), ''));
    expect([err.code, err.reason]).toEqual([422, 'Invalid']);
    expect(err.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
  });

  it('refuses a list item without its key, as the typed conversion does', () => {
    const body = ccmDaemonSet();
    (containers(body)[0] as { name?: string }).name = undefined;
    const err = statusOf(() => apply(undefined, body));
    expect(err.code).toBe(500);
    expect(err.message).toContain('associative list with keys has an element that omits key field "name"');
  });

  it('refuses a body naming another object with 400', () => {
    const current = stored(apply(undefined, ccmDaemonSet()));
    const err = statusOf(() => apply(current, { ...ccmDaemonSet(), metadata: { name: 'other' } }));
    expect(err.code).toBe(400);
  });
});

describe('recordUpdate', () => {
  it('on create, gives the manager every field it set, but none of the server-managed metadata', () => {
    const created = recordUpdate({
      type: NODES,
      current: undefined,
      next: structuredClone(node()),
      fieldManager: 'kubelet',
      now: T0,
    });
    const fields = entry(created, 'kubelet')?.fieldsV1 as Record<string, Record<string, unknown>>;
    expect(Object.keys(fields)).toEqual(['f:metadata', 'f:spec']);
    expect(fields['f:metadata']).toEqual({ 'f:labels': { '.': {}, 'f:kubernetes.io/os': {} } });
    expect(fields['f:spec']).toEqual({ 'f:podCIDRs': { '.': {}, 'v:"10.244.1.0/24"': {} }, 'f:taints': {} });
  });

  it('leaves an object that has no managedFields untracked', () => {
    const current = deployment();
    const next = recordUpdate({
      type: DEPLOYMENTS,
      current,
      next: { ...structuredClone(current), spec: { ...(current.spec as object), replicas: 5 } },
      fieldManager: 'kubectl',
      now: T0,
    });
    expect(next.metadata.managedFields).toBeUndefined();
  });

  it('merges repeated updates of one manager into one entry, and an unchanged update changes nothing', () => {
    const n0 = stored(
      recordUpdate({
        type: NODES,
        current: undefined,
        next: structuredClone(node()),
        fieldManager: 'kubelet',
        now: T0,
      }),
    );
    const n1 = structuredClone(n0) as KubeObject;
    n1.metadata.labels = { ...n1.metadata.labels, role: 'worker' };
    const next = recordUpdate({ type: NODES, current: n0, next: n1, fieldManager: 'kubelet', now: T1 });
    expect(entries(next)).toHaveLength(1);
    expect(entry(next, 'kubelet')?.time).toBe('2024-06-01T00:05:00Z');
    expect(JSON.stringify(entry(next, 'kubelet')?.fieldsV1)).toContain('f:role');
    const same = recordUpdate({
      type: NODES,
      current: n0,
      next: structuredClone(n0),
      fieldManager: 'kubelet',
      now: T1,
    });
    expect(JSON.stringify(same)).toBe(JSON.stringify(n0));
  });

  it('records status writes as a separate entry for the status subresource', () => {
    const n0 = stored(
      recordUpdate({
        type: NODES,
        current: undefined,
        next: structuredClone(node()),
        fieldManager: 'kubelet',
        now: T0,
      }),
    );
    const n1 = structuredClone(n0) as KubeObject;
    n1.status = { conditions: [{ type: 'Ready', status: 'True' }] };
    const next = recordUpdate({
      type: NODES,
      current: n0,
      next: n1,
      fieldManager: 'kubelet',
      subresource: 'status',
      now: T1,
    });
    expect(entry(next, 'kubelet')?.fieldsV1).toEqual({
      'f:metadata': { 'f:labels': { '.': {}, 'f:kubernetes.io/os': {} } },
      'f:spec': { 'f:podCIDRs': { '.': {}, 'v:"10.244.1.0/24"': {} }, 'f:taints': {} },
    });
    const status = entries(next).find((e) => e.subresource === 'status');
    expect(status?.fieldsV1).toEqual({
      'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { 'f:status': {} } } },
    });
  });

  it('clears managedFields when the request sets them to an empty list', () => {
    const n0 = stored(
      recordUpdate({
        type: NODES,
        current: undefined,
        next: structuredClone(node()),
        fieldManager: 'kubelet',
        now: T0,
      }),
    );
    const n1 = structuredClone(n0) as KubeObject;
    n1.metadata.managedFields = [];
    expect(
      recordUpdate({ type: NODES, current: n0, next: n1, fieldManager: 'kubectl', now: T1 }).metadata
        .managedFields,
    ).toBeUndefined();
  });
});
