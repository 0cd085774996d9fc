/**
 * The DaemonSet controller: one pod per eligible node (selectors, taints, the default daemon tolerations),
 * pinned by node affinity and placed by the scheduler; node churn; RollingUpdate and OnDelete; status.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { STAGED_NODE_SELECTOR } from '../../lib/providers/render.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import type { Pod } from '../../lib/twin/workloads/types.ts';
import {
  CONTROL_PLANE,
  eventually,
  eventuallyExpect,
  type Harness,
  startHarness,
  UNINITIALIZED,
} from './workloads-harness.ts';

let h: Harness;
afterEach(async () => h?.stop());

function daemonSet(
  name: string,
  podSpec: Record<string, unknown> = {},
  spec: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: 'kube-system' },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'main', image: `${name}:1` }], ...podSpec },
      },
      ...spec,
    },
  };
}

function status(name: string): Record<string, number> {
  return (h.store.get('daemonsets.apps', 'kube-system', name).status ?? {}) as Record<string, number>;
}

/** Node → pod of the DaemonSet, for pods not being deleted. */
function placement(ds: KubeObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pod of h.podsOf(ds))
    if (!pod.metadata.deletionTimestamp) out[pod.spec.nodeName ?? '(pending)'] = pod.metadata.name;
  return out;
}

function updateTemplateImage(name: string, image: string): void {
  const ds = structuredClone(h.store.get('daemonsets.apps', 'kube-system', name)) as KubeObject & {
    spec: { template: { spec: { containers: { image: string }[] } } };
  };
  const container = ds.spec.template.spec.containers[0];
  if (container) container.image = image;
  h.store.update('daemonsets.apps', ds);
}

describe('the DaemonSet controller', () => {
  it('runs one pod per untainted node, pinned the real way, with the default daemon tolerations', async () => {
    h = await startHarness();
    h.addNode('cp-1', { taints: [CONTROL_PLANE] });
    h.addNode('worker-1');
    h.addNode('worker-2');
    const ds = h.store.create('daemonsets.apps', daemonSet('proxy'));
    await eventually(() => status('proxy').numberAvailable === 2, { what: 'two available daemon pods' });
    expect(Object.keys(placement(ds)).sort()).toEqual(['worker-1', 'worker-2']);
    const pod = h.podsOf(ds).find((p) => p.spec.nodeName === 'worker-1') as Pod;
    expect(pod.metadata.name).toMatch(/^proxy-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(pod.metadata.labels?.['controller-revision-hash']).toBeTruthy();
    expect(pod.spec.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['worker-1'] }] },
          ],
        },
      },
    });
    expect(pod.spec.tolerations).toEqual([
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
      { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(status('proxy')).toEqual({
      currentNumberScheduled: 2,
      numberMisscheduled: 0,
      desiredNumberScheduled: 2,
      numberReady: 2,
      numberAvailable: 2,
      updatedNumberScheduled: 2,
      observedGeneration: 1,
    });
    expect(h.events('SuccessfulCreate').map((e) => e.message)).toContain(`Created pod: ${pod.metadata.name}`);
  });

  it('honours nodeSelector and tolerations: a CCM-like DaemonSet runs on uninitialized control-plane nodes', async () => {
    h = await startHarness();
    h.addNode('cp-1', {
      taints: [CONTROL_PLANE, UNINITIALIZED],
      labels: { 'node-role.kubernetes.io/control-plane': '' },
    });
    h.addNode('worker-1', { taints: [UNINITIALIZED] });
    const ccm = h.store.create(
      'daemonsets.apps',
      daemonSet('ccm', {
        nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
        tolerations: [
          { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
          { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule', operator: 'Exists' },
        ],
      }),
    );
    const plain = h.store.create('daemonsets.apps', daemonSet('agent'));
    await eventually(() => status('ccm').numberReady === 1);
    expect(Object.keys(placement(ccm))).toEqual(['cp-1']);
    await eventually(() => status('agent').observedGeneration === 1);
    expect(status('agent').desiredNumberScheduled).toBe(0);
    expect(h.podsOf(plain)).toHaveLength(0);

    // The CCM initialises worker-1: the plain DaemonSet follows.
    h.editNode('worker-1', { taints: [] });
    await eventually(() => status('agent').numberReady === 1);
    expect(Object.keys(placement(plain))).toEqual(['worker-1']);
  });

  it('empties a DaemonSet whose nodeSelector no node carries (a staged CCM), and fills it again', async () => {
    h = await startHarness();
    const cp = { 'node-role.kubernetes.io/control-plane': '' };
    for (const n of ['cp-1', 'cp-2']) h.addNode(n, { taints: [CONTROL_PLANE, UNINITIALIZED], labels: cp });
    h.addNode('worker-1');
    const tolerations = [
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
      { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
    ];
    const selectNodes = (nodeSelector: Record<string, string>): void => {
      const ds = structuredClone(h.store.get('daemonsets.apps', 'kube-system', 'ccm')) as KubeObject & {
        spec: { template: { spec: Record<string, unknown> } };
      };
      ds.spec.template.spec.nodeSelector = nodeSelector;
      h.store.update('daemonsets.apps', ds);
    };
    const ccm = h.store.create(
      'daemonsets.apps',
      daemonSet('ccm', { nodeSelector: { ...cp, ...STAGED_NODE_SELECTOR }, tolerations }),
    );
    await eventually(() => status('ccm').observedGeneration === 1);
    expect(status('ccm').desiredNumberScheduled).toBe(0);
    expect(h.podsOf(ccm)).toHaveLength(0);

    selectNodes(cp);
    await eventually(() => status('ccm').numberReady === 2, { what: 'one pod per control-plane node' });
    expect(Object.keys(placement(ccm)).sort()).toEqual(['cp-1', 'cp-2']);

    selectNodes({ ...cp, ...STAGED_NODE_SELECTOR });
    await eventuallyExpect(() => expect(h.podsOf(ccm)).toHaveLength(0));
    expect(status('ccm').desiredNumberScheduled).toBe(0);
  });

  it('follows node churn: new nodes, deleted nodes, NoSchedule and NoExecute taints, label changes', async () => {
    h = await startHarness();
    h.addNode('a', { labels: { pool: 'x' } });
    h.addNode('b', { labels: { pool: 'x' } });
    const ds = h.store.create('daemonsets.apps', daemonSet('logs', { nodeSelector: { pool: 'x' } }));
    await eventually(() => status('logs').numberReady === 2);

    h.addNode('c', { labels: { pool: 'x' } });
    h.addNode('d', { labels: { pool: 'y' } });
    await eventually(() => status('logs').numberReady === 3);
    expect(Object.keys(placement(ds)).sort()).toEqual(['a', 'b', 'c']);

    // Gone node: its pod is collected; relabelled node: its pod leaves.
    h.store.delete('nodes', undefined, 'a');
    h.editNode('b', { labels: { pool: 'y' } });
    h.editNode('d', { labels: { pool: 'x' } });
    await eventuallyExpect(() => expect(Object.keys(placement(ds)).sort()).toEqual(['c', 'd']));

    // NoSchedule: the pod stays but is misscheduled; NoExecute: it goes.
    h.editNode('c', { taints: [{ key: 'maintenance', effect: 'NoSchedule' }] });
    await eventually(() => status('logs').numberMisscheduled === 1);
    expect(status('logs').desiredNumberScheduled).toBe(1);
    expect(Object.keys(placement(ds)).sort()).toEqual(['c', 'd']);
    h.editNode('c', { taints: [{ key: 'maintenance', effect: 'NoExecute' }] });
    await eventuallyExpect(() => expect(Object.keys(placement(ds))).toEqual(['d']));
    await eventually(() => status('logs').numberMisscheduled === 0);
  });

  it('runs no pod on a node until it is Ready (its not-ready NoSchedule taint is not tolerated)', async () => {
    h = await startHarness();
    h.addNode('late', { ready: false });
    const ds = h.store.create('daemonsets.apps', daemonSet('cni'));
    await eventually(() => status('cni').desiredNumberScheduled === 0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(h.podsOf(ds)).toEqual([]);
    h.editNode('late', { ready: true });
    await eventually(() => status('cni').numberReady === 1);
    expect(h.podsOf(ds)[0]?.spec.nodeName).toBe('late');
  });

  it('rolls a template change one node at a time (RollingUpdate) and only on deletion (OnDelete)', async () => {
    h = await startHarness();
    for (const n of ['n1', 'n2', 'n3']) h.addNode(n);
    const rolling = h.store.create('daemonsets.apps', daemonSet('rolling'));
    const manual = h.store.create(
      'daemonsets.apps',
      daemonSet('manual', {}, { updateStrategy: { type: 'OnDelete' } }),
    );
    await eventually(() => status('rolling').numberAvailable === 3 && status('manual').numberAvailable === 3);

    let maxUnavailable = 0;
    h.store.subscribe((event) => {
      if (event.key !== 'pods') return;
      const available = h
        .podsOf(rolling)
        .filter(
          (p) =>
            !p.metadata.deletionTimestamp &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
      maxUnavailable = Math.max(maxUnavailable, 3 - available.length);
    });
    updateTemplateImage('rolling', 'rolling:2');
    updateTemplateImage('manual', 'manual:2');
    const done = (): boolean => {
      const s = status('rolling');
      return s.observedGeneration === 2 && s.updatedNumberScheduled === 3 && s.numberAvailable === 3;
    };
    await eventually(done, {
      what: 'the rolling update',
    });
    expect(maxUnavailable).toBe(1);
    expect(
      h.podsOf(rolling).every((p) => (p.spec.containers as { image: string }[])[0]?.image === 'rolling:2'),
    ).toBe(true);
    expect(status('rolling').observedGeneration).toBe(2);

    await eventually(() => status('manual').observedGeneration === 2);
    expect(status('manual').updatedNumberScheduled).toBeUndefined();
    const old = h.podsOf(manual).find((p) => p.spec.nodeName === 'n2') as Pod;
    h.store.delete('pods', 'kube-system', old.metadata.name);
    await eventually(
      () => status('manual').updatedNumberScheduled === 1 && status('manual').numberAvailable === 3,
    );
    const replaced = h.podsOf(manual).find((p) => p.spec.nodeName === 'n2') as Pod;
    expect((replaced.spec.containers as { image: string }[])[0]?.image).toBe('manual:2');
  });

  it('replaces a failed daemon pod', async () => {
    h = await startHarness();
    h.addNode('n1');
    let failOnce = true;
    h.outcome = () => {
      if (!failOnce) return 'Running';
      failOnce = false;
      return 'Failed';
    };
    const ds = h.store.create('daemonsets.apps', daemonSet('flaky'));
    await eventually(() => status('flaky').numberReady === 1);
    const pods = h.podsOf(ds);
    expect(pods).toHaveLength(1);
    expect(pods[0]?.status?.phase).toBe('Running');
    expect(h.events('SuccessfulDelete')).toHaveLength(1);
  });
});
