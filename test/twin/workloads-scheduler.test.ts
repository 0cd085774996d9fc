/**
 * The scheduler: binding to Ready, schedulable, matching nodes whose taints the pod tolerates, spreading by
 * pod count, and the real Unschedulable condition and retry when nodes change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../lib/twin/store.ts';
import { toleratesTaint } from '../../lib/twin/workloads/placement.ts';
import type { Pod, Taint, Toleration } from '../../lib/twin/workloads/types.ts';
import {
  CONTROL_PLANE,
  condition,
  eventually,
  type Harness,
  startHarness,
  UNINITIALIZED,
} from './workloads-harness.ts';

let h: Harness;
afterEach(async () => h?.stop());

function createPod(name: string, spec: Record<string, unknown> = {}): KubeObject {
  return h.store.create('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'main', image: 'busybox' }], ...spec },
  });
}

async function boundNode(name: string): Promise<string> {
  return eventually(() => h.pod('default', name)?.spec.nodeName, { what: `${name} bound` });
}

async function unschedulableMessage(name: string): Promise<string> {
  const found = await eventually(() => {
    const c = condition(h.pod('default', name), 'PodScheduled');
    return c?.status === 'False' && c;
  });
  expect(found.reason).toBe('Unschedulable');
  return found.message ?? '';
}

describe('toleration matching (Toleration.ToleratesTaint)', () => {
  const taint: Taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
  it.each<[Toleration, boolean]>([
    [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }, true],
    [{ key: 'k', value: 'v' }, true],
    [{ key: 'k', operator: 'Equal', value: 'other' }, false],
    [{ key: 'k', operator: 'Exists' }, true],
    [{ key: 'k', operator: 'Exists', effect: 'NoExecute' }, false],
    [{ operator: 'Exists' }, true],
    [{ key: 'other', operator: 'Exists' }, false],
  ])('%j tolerates k=v:NoSchedule: %s', (toleration, expected) => {
    expect(toleratesTaint(toleration, taint)).toBe(expected);
  });
});

describe('the scheduler', () => {
  it('spreads pods to the node with fewest pods, ties by name, and records the binding', async () => {
    h = await startHarness();
    for (const n of ['node-b', 'node-a', 'node-c']) h.addNode(n);
    createPod('p1');
    expect(await boundNode('p1')).toBe('node-a');
    createPod('p2');
    expect(await boundNode('p2')).toBe('node-b');
    createPod('p3');
    expect(await boundNode('p3')).toBe('node-c');
    createPod('p4');
    expect(await boundNode('p4')).toBe('node-a');
    expect(condition(h.pod('default', 'p1'), 'PodScheduled')?.status).toBe('True');
    const scheduled = h.events('Scheduled').find((e) => (e.involvedObject as { name: string }).name === 'p1');
    expect(scheduled).toMatchObject({
      type: 'Normal',
      message: 'Successfully assigned default/p1 to node-a',
      source: { component: 'default-scheduler' },
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'p1' },
    });
  });

  it('honours nodeSelector and required node affinity (expressions and matchFields)', async () => {
    h = await startHarness();
    h.addNode('a', { labels: { zone: 'z1', disk: 'ssd' } });
    h.addNode('b', { labels: { zone: 'z2', gpu: 'yes' } });
    h.addNode('c', { labels: { zone: 'z3' } });
    createPod('by-selector', { nodeSelector: { zone: 'z2' } });
    const affinity = (terms: unknown[]): Record<string, unknown> => ({
      affinity: {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
      },
    });
    createPod(
      'not-in-and-absent',
      affinity([
        {
          matchExpressions: [
            { key: 'zone', operator: 'NotIn', values: ['z1', 'z2'] },
            { key: 'gpu', operator: 'DoesNotExist' },
          ],
        },
      ]),
    );
    createPod('exists', affinity([{ matchExpressions: [{ key: 'disk', operator: 'Exists' }] }]));
    createPod(
      'by-name',
      affinity([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }]),
    );
    createPod(
      'terms-ored',
      affinity([
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['nowhere'] }] },
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z3'] }] },
      ]),
    );
    expect(await boundNode('by-selector')).toBe('b');
    expect(await boundNode('not-in-and-absent')).toBe('c');
    expect(await boundNode('exists')).toBe('a');
    expect(await boundNode('by-name')).toBe('b');
    expect(await boundNode('terms-ored')).toBe('c');

    createPod('nowhere', { nodeSelector: { zone: 'z9' } });
    expect(await unschedulableMessage('nowhere')).toBe(
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..",
    );
  });

  it('keeps pods off tainted nodes unless they tolerate the taint', async () => {
    h = await startHarness();
    h.addNode('cp', { taints: [CONTROL_PLANE] });
    h.addNode('dedicated', { taints: [{ key: 'team', value: 'infra', effect: 'NoExecute' }] });
    h.addNode('soft', { taints: [{ key: 'spot', effect: 'PreferNoSchedule' }] });
    createPod('plain');
    expect(await boundNode('plain')).toBe('soft');
    createPod('infra', {
      nodeSelector: { 'kubernetes.io/hostname': 'dedicated' },
      tolerations: [{ key: 'team', operator: 'Equal', value: 'infra', effect: 'NoExecute' }],
    });
    expect(await boundNode('infra')).toBe('dedicated');
    createPod('wrong-value', {
      nodeSelector: { 'kubernetes.io/hostname': 'dedicated' },
      tolerations: [{ key: 'team', operator: 'Equal', value: 'web' }],
    });
    expect(await unschedulableMessage('wrong-value')).toBe(
      // Each node counts once, for the first filter it fails: TaintToleration runs before NodeAffinity.
      "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 1 node(s) had untolerated taint {team: infra}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..",
    );
    createPod('everything', {
      nodeSelector: { 'kubernetes.io/hostname': 'cp' },
      tolerations: [{ operator: 'Exists' }],
    });
    expect(await boundNode('everything')).toBe('cp');
  });

  it('reports Unschedulable while every node is uninitialized, and binds once the taint goes', async () => {
    h = await startHarness();
    for (const n of ['n1', 'n2', 'n3']) h.addNode(n, { taints: [UNINITIALIZED] });
    createPod('web');
    expect(await unschedulableMessage('web')).toBe(
      '0/3 nodes are available: 3 node(s) had untolerated taint {node.cloudprovider.kubernetes.io/uninitialized: true}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..',
    );
    const failed = h.events('FailedScheduling')[0];
    expect(failed).toMatchObject({ type: 'Warning', involvedObject: { name: 'web' } });
    expect(h.pod('default', 'web')?.status?.phase).toBe('Pending');

    // A cloud controller initialises n2: the taint comes off and the pod is retried.
    h.editNode('n2', { taints: [] });
    expect(await boundNode('web')).toBe('n2');
    expect(condition(h.pod('default', 'web'), 'PodScheduled')?.status).toBe('True');
  });

  it('skips NotReady and cordoned nodes, and retries when one becomes Ready', async () => {
    h = await startHarness();
    h.addNode('down', { ready: false });
    h.addNode('cordoned', { unschedulable: true });
    createPod('waiting');
    expect(await unschedulableMessage('waiting')).toBe(
      '0/2 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..',
    );
    h.editNode('down', { ready: true });
    expect(await boundNode('waiting')).toBe('down');

    createPod('tolerates-cordon', {
      nodeSelector: { 'kubernetes.io/hostname': 'cordoned' },
      tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
    });
    expect(await boundNode('tolerates-cordon')).toBe('cordoned');
  });

  it('leaves alone pods for another scheduler, pods with a nodeName, and says when there are no nodes', async () => {
    h = await startHarness();
    createPod('lonely');
    expect(await unschedulableMessage('lonely')).toBe('no nodes available to schedule pods');
    h.addNode('n1');
    expect(await boundNode('lonely')).toBe('n1');
    createPod('custom', { schedulerName: 'my-scheduler' });
    createPod('pinned', { nodeName: 'elsewhere' });
    createPod('marker');
    await boundNode('marker');
    const custom = h.pod('default', 'custom') as Pod;
    expect(custom.spec.nodeName).toBeUndefined();
    expect(condition(custom, 'PodScheduled')).toBeUndefined();
    expect(h.pod('default', 'pinned')?.spec.nodeName).toBe('elsewhere');
    expect(condition(h.pod('default', 'pinned'), 'PodScheduled')).toBeUndefined();
  });
});
