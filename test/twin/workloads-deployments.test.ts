/**
 * The Deployment controller: pods from the template (names, labels, owner), scaling (newest first), rolling
 * updates within maxSurge/maxUnavailable, Recreate, and the status `kubectl rollout status` reads.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../lib/twin/store.ts';
import type { Pod } from '../../lib/twin/workloads/types.ts';
import { condition, eventually, eventuallyExpect, type Harness, startHarness } from './workloads-harness.ts';

let h: Harness;
afterEach(async () => h?.stop());

interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
}

function deployment(name: string, spec: Record<string, unknown> = {}, image = 'nginx:1.25'): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'main', image }] },
      },
      ...spec,
    },
  };
}

function current(name: string): KubeObject & { status?: DeploymentStatus } {
  return h.store.get('deployments.apps', 'default', name);
}

/** kubectl rollout status: observed the latest generation, every replica updated and available. */
function rolledOut(name: string): boolean {
  const d = current(name);
  const want = (d.spec as { replicas: number }).replicas;
  const s = d.status ?? {};
  return (
    (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
    (s.updatedReplicas ?? 0) === want &&
    (s.replicas ?? 0) === want &&
    (s.availableReplicas ?? 0) === want
  );
}

function activePods(d: KubeObject): Pod[] {
  return h.podsOf(d).filter((p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Failed');
}

function withImage(d: KubeObject, image: string): KubeObject {
  const next = structuredClone(current(d.metadata.name)) as KubeObject & {
    spec: { template: { spec: { containers: { image: string }[] } } };
  };
  const container = next.spec.template.spec.containers[0];
  if (container) container.image = image;
  return h.store.update('deployments.apps', next);
}

function scale(name: string, replicas: number): void {
  const next = structuredClone(current(name)) as KubeObject & { spec: { replicas: number } };
  next.spec.replicas = replicas;
  h.store.update('deployments.apps', next);
}

/** Watch the deployment's pods on every change and keep the extremes a rollout reaches. */
function watchRollout(d: KubeObject): { maxActive: number; minAvailable: number; sawOldAndNew: boolean } {
  const seen = { maxActive: 0, minAvailable: Infinity, sawOldAndNew: false };
  h.store.subscribe((event) => {
    if (event.key !== 'pods') return;
    const pods = activePods(d);
    seen.maxActive = Math.max(seen.maxActive, pods.length);
    const ready = pods.filter((p) =>
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    seen.minAvailable = Math.min(seen.minAvailable, ready.length);
    if (new Set(pods.map((p) => p.metadata.labels?.['pod-template-hash'])).size > 1) seen.sawOldAndNew = true;
  });
  return seen;
}

describe('the Deployment controller', () => {
  it('creates the replicas from the template, owned and labelled as a ReplicaSet’s pods, and reports them available', async () => {
    h = await startHarness();
    h.addNode('n1');
    h.addNode('n2');
    const d = h.store.create('deployments.apps', deployment('web'));
    await eventually(() => rolledOut('web'), { what: 'web rolled out' });
    const pods = h.podsOf(d);
    expect(pods).toHaveLength(3);
    const hash = pods[0]?.metadata.labels?.['pod-template-hash'] ?? '';
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    for (const pod of pods) {
      expect(pod.metadata.name).toMatch(new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
      expect(pod.metadata.labels).toEqual({ app: 'web', 'pod-template-hash': hash });
      expect(pod.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: 'web',
          uid: d.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(pod.spec.containers).toEqual([{ name: 'main', image: 'nginx:1.25' }]);
    }
    const done = current('web');
    expect(done.status).toMatchObject({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    });
    expect(done.status?.unavailableReplicas).toBeUndefined();
    expect(condition(done, 'Available')).toMatchObject({
      status: 'True',
      reason: 'MinimumReplicasAvailable',
      message: 'Deployment has minimum availability.',
    });
    expect(condition(done, 'Progressing')).toMatchObject({
      status: 'True',
      reason: 'NewReplicaSetAvailable',
      message: `ReplicaSet "web-${hash}" has successfully progressed.`,
    });
    expect(h.events('ScalingReplicaSet').map((e) => e.message)).toContain(
      `Scaled up replica set web-${hash} from 0 to 3`,
    );
  });

  it('scales up, and scales down deleting the newest pods first', async () => {
    h = await startHarness();
    h.addNode('n1');
    const d = h.store.create('deployments.apps', deployment('api', { replicas: 2 }));
    await eventually(() => rolledOut('api'));
    const firstTwo = h.podsOf(d).map((p) => p.metadata.name);
    scale('api', 5);
    await eventually(() => rolledOut('api') && h.podsOf(d).length === 5);
    scale('api', 2);
    await eventually(() => rolledOut('api') && h.podsOf(d).length === 2);
    expect(
      h
        .podsOf(d)
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(firstTwo.sort());
    expect(current('api').status?.observedGeneration).toBe(3);
  });

  it('rolls a template change out within maxSurge and maxUnavailable, ending with only new pods', async () => {
    h = await startHarness();
    h.addNode('n1');
    h.addNode('n2');
    const d = h.store.create(
      'deployments.apps',
      deployment('app', {
        replicas: 4,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
      }),
    );
    await eventually(() => rolledOut('app'));
    const oldHash = h.podsOf(d)[0]?.metadata.labels?.['pod-template-hash'];
    const seen = watchRollout(d);
    withImage(d, 'nginx:1.26');
    expect(current('app').metadata.generation).toBe(2);
    await eventually(() => rolledOut('app'), { what: 'app rolled out' });
    const pods = h.podsOf(d);
    expect(pods).toHaveLength(4);
    const newHash = pods[0]?.metadata.labels?.['pod-template-hash'];
    expect(newHash).not.toBe(oldHash);
    expect(pods.every((p) => p.metadata.labels?.['pod-template-hash'] === newHash)).toBe(true);
    expect(pods.every((p) => (p.spec.containers as { image: string }[])[0]?.image === 'nginx:1.26')).toBe(
      true,
    );
    expect(seen.sawOldAndNew).toBe(true);
    expect(seen.maxActive).toBeLessThanOrEqual(5);
    expect(seen.minAvailable).toBeGreaterThanOrEqual(3);
    expect(current('app').status?.observedGeneration).toBe(2);
    expect(h.events('ScalingReplicaSet').map((e) => e.message)).toContain(
      `Scaled down replica set app-${oldHash} from 4 to 3`,
    );
  });

  it('with Recreate removes every old pod before the first new one', async () => {
    h = await startHarness();
    h.addNode('n1');
    const d = h.store.create('deployments.apps', deployment('batchy', { strategy: { type: 'Recreate' } }));
    await eventually(() => rolledOut('batchy'));
    const seen = watchRollout(d);
    withImage(d, 'nginx:1.26');
    await eventually(() => rolledOut('batchy'));
    expect(seen.sawOldAndNew).toBe(false);
    expect(seen.minAvailable).toBe(0);
  });

  it('is Available with zero replicas and creates no pods', async () => {
    h = await startHarness();
    h.addNode('n1');
    const d = h.store.create('deployments.apps', deployment('staged', { replicas: 0 }));
    await eventually(() => current('staged').status?.observedGeneration === 1);
    expect(h.podsOf(d)).toHaveLength(0);
    expect(condition(current('staged'), 'Available')?.status).toBe('True');
    expect(rolledOut('staged')).toBe(true);
    scale('staged', 1);
    await eventually(() => rolledOut('staged'));
    expect(h.podsOf(d)).toHaveLength(1);
  });

  it('reports missing availability and, past progressDeadlineSeconds, ProgressDeadlineExceeded', async () => {
    h = await startHarness();
    h.addNode('n1');
    h.outcome = () => 'Pending';
    h.store.create('deployments.apps', deployment('stuck', { replicas: 2, progressDeadlineSeconds: 1 }));
    await eventuallyExpect(() => {
      const d = current('stuck');
      expect(d.status).toMatchObject({ replicas: 2, updatedReplicas: 2, unavailableReplicas: 2 });
      expect(d.status?.availableReplicas).toBeUndefined();
      expect(condition(d, 'Available')).toMatchObject({
        status: 'False',
        reason: 'MinimumReplicasUnavailable',
      });
    });
    expect(condition(current('stuck'), 'Progressing')?.reason).toMatch(
      /^(NewReplicaSetCreated|ReplicaSetUpdated)$/,
    );
    await eventually(
      () => condition(current('stuck'), 'Progressing')?.reason === 'ProgressDeadlineExceeded',
      {
        what: 'the progress deadline',
      },
    );
    expect(condition(current('stuck'), 'Progressing')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(/^ReplicaSet "stuck-\w+" has timed out progressing\.$/),
    });
  });

  it('replaces pods that are deleted, and leaves with its pods', async () => {
    h = await startHarness();
    h.addNode('n1');
    const d = h.store.create('deployments.apps', deployment('self-healing', { replicas: 2 }));
    await eventually(() => rolledOut('self-healing'));
    const victim = h.podsOf(d)[0] as Pod;
    h.store.delete('pods', 'default', victim.metadata.name);
    await eventually(
      () => h.podsOf(d).length === 2 && !h.pod('default', victim.metadata.name) && rolledOut('self-healing'),
    );
    h.store.delete('deployments.apps', 'default', 'self-healing');
    expect(h.podsOf(d)).toHaveLength(0);
  });
});
