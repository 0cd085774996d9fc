/**
 * The Job controller: pods with the real labels, owner and tracking finalizer; completions and
 * parallelism; backoffLimit; activeDeadlineSeconds; ttlSecondsAfterFinished; pods pinned by nodeName; the
 * kubelet's terminated state left as it wrote it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../lib/twin/store.ts';
import type { Pod } from '../../lib/twin/workloads/types.ts';
import { CONTROL_PLANE, condition, eventually, type Harness, startHarness } from './workloads-harness.ts';

let h: Harness;
afterEach(async () => h?.stop());

const FINALIZER = 'batch.kubernetes.io/job-tracking';

function job(
  name: string,
  spec: Record<string, unknown> = {},
  podSpec: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: 'kube-system' },
    spec: {
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': 'ccm-migrate-agent' } },
        spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'agent:1' }], ...podSpec },
      },
      ...spec,
    },
  };
}

type JobStatus = Record<string, unknown> & { conditions?: { type: string }[] };

function current(name: string): (KubeObject & { status?: JobStatus }) | undefined {
  return h.store.tryGet('jobs.batch', 'kube-system', name);
}

function finished(name: string, type: 'Complete' | 'Failed'): boolean {
  return condition(current(name), type)?.status === 'True';
}

describe('the Job controller', () => {
  it('runs a pod to completion, counts it once, and leaves the kubelet’s termination message alone', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    h.outcome = () => 'Succeeded';
    const j = h.store.create('jobs.batch', job('once'));
    await eventually(() => finished('once', 'Complete'), { what: 'the Job to complete' });
    const [pod] = h.podsOf(j);
    expect(pod?.metadata.name).toMatch(/^once-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(pod?.metadata.labels).toEqual({
      'app.kubernetes.io/name': 'ccm-migrate-agent',
      'batch.kubernetes.io/controller-uid': j.metadata.uid,
      'batch.kubernetes.io/job-name': 'once',
      'controller-uid': j.metadata.uid,
      'job-name': 'once',
    });
    expect(pod?.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        name: 'once',
        uid: j.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    await eventually(() => !h.podsOf(j)[0]?.metadata.finalizers, { what: 'the tracking finalizer to go' });
    const done = h.podsOf(j)[0] as Pod;
    expect(done.status?.phase).toBe('Succeeded');
    expect(done.status?.containerStatuses).toEqual([
      expect.objectContaining({
        state: { terminated: expect.objectContaining({ message: '{"result":"Succeeded"}' }) },
      }),
    ]);
    const status = current('once')?.status;
    expect(status).toMatchObject({
      succeeded: 1,
      ready: 0,
      startTime: expect.any(String),
      completionTime: expect.any(String),
    });
    expect(status?.active).toBeUndefined();
    expect(status?.failed).toBeUndefined();
    expect(status?.conditions?.map((c) => c.type)).toEqual(['Complete']);
    expect(h.events('Completed')[0]).toMatchObject({
      message: 'Job completed',
      source: { component: 'job-controller' },
    });
    expect(h.events('SuccessfulCreate').map((e) => e.message)).toContain(
      `Created pod: ${done.metadata.name}`,
    );
  });

  it('puts the tracking finalizer on pods it runs', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    const j = h.store.create('jobs.batch', job('tracked'));
    await eventually(() => current('tracked')?.status?.ready === 1);
    expect(h.podsOf(j)[0]?.metadata.finalizers).toEqual([FINALIZER]);
    expect(current('tracked')?.status).toMatchObject({ active: 1, ready: 1 });
  });

  it('honours parallelism and completions', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    h.addNode('worker-2');
    h.outcome = () => 'Succeeded';
    let maxActive = 0;
    h.store.subscribe((event) => {
      if (event.key !== 'pods') return;
      const active = h.store.list('pods', 'kube-system').items.filter((p) => {
        const phase = (p as Pod).status?.phase;
        return p.metadata.labels?.['job-name'] === 'batch' && phase !== 'Succeeded' && phase !== 'Failed';
      });
      maxActive = Math.max(maxActive, active.length);
    });
    const j = h.store.create('jobs.batch', job('batch', { completions: 5, parallelism: 2 }));
    await eventually(() => finished('batch', 'Complete'));
    expect(current('batch')?.status?.succeeded).toBe(5);
    expect(h.podsOf(j)).toHaveLength(5);
    expect(maxActive).toBe(2);
  });

  it('fails with BackoffLimitExceeded once more pods failed than backoffLimit', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    h.outcome = () => 'Failed';
    const j = h.store.create('jobs.batch', job('broken', { backoffLimit: 2 }));
    await eventually(() => finished('broken', 'Failed'));
    expect(condition(current('broken'), 'Failed')).toMatchObject({
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    });
    expect(current('broken')?.status?.failed).toBe(3);
    expect(h.podsOf(j)).toHaveLength(3);
    expect(h.podsOf(j).every((p) => p.status?.phase === 'Failed' && !p.metadata.finalizers)).toBe(true);
    expect(h.events('BackoffLimitExceeded')[0]).toMatchObject({ type: 'Warning' });
  });

  it('fails with DeadlineExceeded past activeDeadlineSeconds and removes its running pods', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    const j = h.store.create(
      'jobs.batch',
      job('slow', { activeDeadlineSeconds: 1, parallelism: 2, completions: 2 }),
    );
    await eventually(() => current('slow')?.status?.active === 2);
    await eventually(() => finished('slow', 'Failed'), { what: 'the deadline', timeoutMs: 5_000 });
    expect(condition(current('slow'), 'Failed')).toMatchObject({
      reason: 'DeadlineExceeded',
      message: 'Job was active longer than specified deadline',
    });
    expect(h.podsOf(j)).toHaveLength(0);
    expect(current('slow')?.status).toMatchObject({ failed: 2, ready: 0 });
    expect(current('slow')?.status?.active).toBeUndefined();
  });

  it('is deleted with its pods ttlSecondsAfterFinished after it finished', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    h.outcome = () => 'Succeeded';
    const j = h.store.create('jobs.batch', job('short-lived', { ttlSecondsAfterFinished: 0 }));
    await eventually(() => !current('short-lived'), { what: 'the Job to be deleted' });
    expect(h.podsOf(j)).toHaveLength(0);
  });

  it('runs a pod pinned by nodeName on that node, bypassing the scheduler, even on a tainted node', async () => {
    h = await startHarness();
    h.addNode('cp-1', { taints: [CONTROL_PLANE] });
    h.addNode('worker-1');
    h.outcome = () => 'Succeeded';
    const j = h.store.create('jobs.batch', job('agent-cp-1', { backoffLimit: 0 }, { nodeName: 'cp-1' }));
    await eventually(() => finished('agent-cp-1', 'Complete'));
    const [pod] = h.podsOf(j);
    expect(pod?.spec.nodeName).toBe('cp-1');
    expect(condition(pod, 'PodScheduled')).toBeUndefined();
  });

  it('releases its pods when the Job is deleted while they run', async () => {
    h = await startHarness();
    h.addNode('worker-1');
    const j = h.store.create('jobs.batch', job('cancelled'));
    await eventually(() => current('cancelled')?.status?.ready === 1);
    h.store.delete('jobs.batch', 'kube-system', 'cancelled', { propagationPolicy: 'Background' });
    await eventually(() => h.podsOf(j).length === 0, { what: 'the pods to go' });
  });

  it('adds SuccessCriteriaMet before Complete from Kubernetes 1.31', async () => {
    h = await startHarness({ kubernetesVersion: 'v1.31.4' });
    h.addNode('worker-1');
    h.outcome = () => 'Succeeded';
    h.store.create('jobs.batch', job('modern'));
    await eventually(() => finished('modern', 'Complete'));
    expect(current('modern')?.status?.conditions?.map((c) => c.type)).toEqual([
      'SuccessCriteriaMet',
      'Complete',
    ]);
  });
});
