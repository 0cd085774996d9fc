/**
 * The steps' read of a run's snapshot: one parse per run and store (the snapshot is written once), and a
 * run without one named.
 */
import { expect, it, vi } from 'vitest';
import type { StepContext } from '../../lib/steps/context.ts';
import { loadSnapshot } from '../../lib/steps/snapshot-store.ts';
import type { RunStore } from '../../lib/store/run-store.ts';

const SNAPSHOT = {
  takenAt: '2026-11-26T00:00:00.000Z',
  provider: 'aws',
  kubernetesVersion: 'v1.26.15',
  ccmImage: 'registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.14',
  clusterName: 'kubernetes',
  ccmReplicas: 1,
  nodes: {},
  files: {},
  loadBalancers: [],
};

/** A step context whose store answers `get` with `snapshot` for every run, counting the reads. */
function contextWith(snapshot: unknown): { ctx: StepContext; get: ReturnType<typeof vi.fn> } {
  const get = vi.fn(async () => ({ snapshot }));
  return { ctx: { store: { get } as unknown as RunStore } as StepContext, get };
}

it('reads and parses a run’s snapshot once per store, and each run’s on its own', async () => {
  const { ctx, get } = contextWith(SNAPSHOT);

  const first = await loadSnapshot(ctx, { clusterId: 'c', runId: 'up-1' });
  const again = await loadSnapshot(ctx, { clusterId: 'c', runId: 'up-1' });
  await loadSnapshot(ctx, { clusterId: 'c', runId: 'up-2' });

  expect(first).toMatchObject({ provider: 'aws', clusterName: 'kubernetes' });
  expect(again).toBe(first);
  expect(get.mock.calls).toEqual([
    ['c', 'up-1'],
    ['c', 'up-2'],
  ]);
});

it('names the run whose preflight did not record a snapshot, and reads it again next time', async () => {
  const { ctx, get } = contextWith(undefined);

  await expect(loadSnapshot(ctx, { clusterId: 'c', runId: 'up-3' })).rejects.toThrow(
    'run up-3 of cluster c has no snapshot: its preflight did not finish',
  );
  await expect(loadSnapshot(ctx, { clusterId: 'c', runId: 'up-3' })).rejects.toThrow(/no snapshot/);
  expect(get).toHaveBeenCalledTimes(2);
});
