/**
 * The behaviour every RunStore shares, run against each implementation: begin/resume/lock, racing begins,
 * first snapshot wins, concurrent step records, updates, finish (incl. rolled-back), list order.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { ClusterLockedError, InvalidInputError } from '../../lib/errors.ts';
import type { RunStore } from '../../lib/store/run-store.ts';

export interface StoreUnderTest {
  /** A store on the suite's storage whose clock advances one second per reading. */
  store(): RunStore;
  /** Another store on the same storage, through a connection of its own (another process's view). */
  another(): RunStore;
}

export const upgrade = (runId: string, clusterId = 'c1') => ({ clusterId, runId, kind: 'upgrade' as const });

/** The error a promise rejects with (the test fails if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (err: unknown) => ({ err }),
  );
  if (!('err' in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  return outcome.err as Error;
}

/**
 * `setup` gets the suite's clock (2026-01-01T00:00:00Z, one second later at each reading) and returns the
 * stores of a fresh, empty storage.
 */
export function describeRunStoreContract(
  name: string,
  setup: (now: () => Date) => Promise<StoreUnderTest>,
): void {
  describe(`${name}: the RunStore contract`, () => {
    let t: StoreUnderTest;
    const store = () => t.store();
    beforeEach(async () => {
      let clock = Date.parse('2026-01-01T00:00:00Z');
      t = await setup(() => {
        clock += 1000;
        return new Date(clock);
      });
    });

    describe('begin', () => {
      it('creates a running record that holds the cluster', async () => {
        const record = await store().begin(upgrade('r1'));
        expect(record).toEqual({
          clusterId: 'c1',
          runId: 'r1',
          kind: 'upgrade',
          status: 'running',
          startedAt: '2026-01-01T00:00:01.000Z',
          updatedAt: '2026-01-01T00:00:01.000Z',
          steps: {},
        });
        expect(await t.another().get('c1', 'r1')).toEqual(record);
        expect(await t.another().current('c1')).toEqual(record);
        expect(await store().get('c1', 'r2')).toBeUndefined();
        expect(await store().current('c2')).toBeUndefined();
      });

      it('resumes the unfinished run with the same id, as it was', async () => {
        const s = store();
        await s.begin(upgrade('r1'));
        await s.recordStep('c1', 'r1', 'preflight', { ok: true });
        await s.setSnapshotOnce('c1', 'r1', { kcm: ['--cloud-provider=aws'] });
        const again = await t.another().begin(upgrade('r1'));
        expect(again.startedAt).toBe('2026-01-01T00:00:01.000Z');
        expect(again.steps.preflight?.result).toEqual({ ok: true });
        expect(again.snapshot).toEqual({ kcm: ['--cloud-provider=aws'] });
        await expect(store().begin({ ...upgrade('r1'), kind: 'downgrade' })).rejects.toThrow(
          /run r1 of cluster c1 is an upgrade, not a downgrade/,
        );
      });

      it('refuses another run while one holds the cluster, naming it and when it started', async () => {
        await store().begin(upgrade('r1'));
        const err = await rejection(t.another().begin(upgrade('r2')));
        expect(err).toBeInstanceOf(ClusterLockedError);
        expect(err.message).toContain('upgrade run r1, started 2026-01-01T00:00:01.000Z');
        expect(await store().get('c1', 'r2')).toBeUndefined();
        // Other clusters are not held.
        await expect(store().begin(upgrade('r2', 'c2'))).resolves.toMatchObject({ status: 'running' });
      });

      it('refuses ids that are not DNS labels, and kinds it does not know', async () => {
        for (const bad of ['', 'R1', '../etc', 'a/b', 'a#b', '-a', 'a-', 'a_b', 'x'.repeat(64)]) {
          await expect(store().begin(upgrade(bad))).rejects.toBeInstanceOf(InvalidInputError);
          await expect(store().begin(upgrade('r1', bad))).rejects.toBeInstanceOf(InvalidInputError);
        }
        await expect(store().begin({ ...upgrade('r1'), kind: 'sideways' as never })).rejects.toBeInstanceOf(
          InvalidInputError,
        );
        await expect(store().get('c1', 'R1')).rejects.toBeInstanceOf(InvalidInputError);
        await expect(store().list('C1')).rejects.toBeInstanceOf(InvalidInputError);
        expect(await store().current('c1')).toBeUndefined();
        await expect(store().begin(upgrade('x'.repeat(63)))).resolves.toMatchObject({
          runId: 'x'.repeat(63),
        });
      });

      it('lets exactly one of 20 racing stores take the cluster; the others name the winner', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => t.another().begin(upgrade(`r${i}`))),
        );
        const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(19);
        const winner = won[0]?.runId;
        for (const err of lost) {
          expect(err).toBeInstanceOf(ClusterLockedError);
          expect(err.message).toContain(`run ${winner},`);
        }
        expect((await store().current('c1'))?.runId).toBe(winner);
        expect((await store().list('c1')).map((r) => r.runId)).toEqual([winner]);
      });
    });

    describe('snapshots', () => {
      it('keeps the first snapshot written, returns it to every later writer, and never changes it', async () => {
        const s = store();
        await s.begin(upgrade('r1'));
        expect(await s.setSnapshotOnce('c1', 'r1', { kcm: ['--cloud-provider=aws'] })).toEqual({
          kcm: ['--cloud-provider=aws'],
        });
        expect(await s.setSnapshotOnce('c1', 'r1', { kcm: [] })).toEqual({ kcm: ['--cloud-provider=aws'] });
        expect((await t.another().get('c1', 'r1'))?.snapshot).toEqual({ kcm: ['--cloud-provider=aws'] });
        await expect(s.setSnapshotOnce('c1', 'r1', undefined as never)).rejects.toThrow(
          /invalid snapshot of run r1/,
        );
        await expect(s.update('c1', 'r1', (r) => ({ ...r, snapshot: { kcm: [] } }))).rejects.toThrow(
          /may not change its snapshot/,
        );
        // An update that leaves it alone is fine.
        await s.update('c1', 'r1', (r) => ({ ...r, summary: { note: 'x' } }));
        expect(await s.get('c1', 'r1')).toMatchObject({
          snapshot: { kcm: ['--cloud-provider=aws'] },
          summary: { note: 'x' },
        });
      });

      it('gives every concurrent writer the same, stored snapshot', async () => {
        const s = store();
        await s.begin(upgrade('r1'));
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) => t.another().setSnapshotOnce('c1', 'r1', { writer: i })),
        );
        const stored = (await s.get('c1', 'r1'))?.snapshot;
        expect(stored).toEqual({ writer: expect.any(Number) });
        for (const a of answers) expect(a).toEqual(stored);
      });
    });

    describe('concurrent changes', () => {
      it('loses none of 50 step records written at once through two stores', async () => {
        await store().begin(upgrade('r1'));
        const a = store();
        const b = t.another();
        await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            (i % 2 ? a : b).recordStep('c1', 'r1', `kubelet/worker-${i}`, {
              node: `worker-${i}`,
              changed: true,
            }),
          ),
        );
        const record = await a.get('c1', 'r1');
        expect(Object.keys(record?.steps ?? {})).toHaveLength(50);
        expect(record?.steps['kubelet/worker-49']?.result).toEqual({ node: 'worker-49', changed: true });
      });

      it('applies updates to the latest record and refuses ones that change what finish owns', async () => {
        const s = store();
        const begun = await s.begin(upgrade('r1'));
        await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (i % 2 ? s : t.another()).update('c1', 'r1', (r) => ({
              ...r,
              summary: { count: ((r.summary as { count?: number })?.count ?? 0) + 1 },
            })),
          ),
        );
        const record = await s.get('c1', 'r1');
        expect(record?.summary).toEqual({ count: 10 });
        expect(record && record.updatedAt > begun.updatedAt).toBe(true);
        await expect(s.update('c1', 'r1', (r) => ({ ...r, status: 'succeeded' }))).rejects.toThrow(
          /may not change status/,
        );
        await expect(
          s.update('c1', 'r1', (r) => ({ ...r, summary: { bad: undefined as never, f: () => 1 } as never })),
        ).rejects.toBeInstanceOf(InvalidInputError);
        await expect(s.recordStep('c1', 'r1', 'x', Number.NaN as never)).rejects.toThrow(/result of step x/);
        await expect(s.recordStep('c1', 'r1', '', 1)).rejects.toThrow(/a step key is required/);
        await expect(s.recordStep('c1', 'nope', 'x', 1)).rejects.toThrow(/cluster c1 has no run nope/);
        expect((await s.get('c1', 'r1'))?.summary).toEqual({ count: 10 });
      });
    });

    describe('finish', () => {
      it('ends the run, releases the cluster, and repeats harmlessly', async () => {
        const s = store();
        await s.begin(upgrade('r1'));
        const done = await s.finish('c1', 'r1', {
          status: 'failed',
          error: { name: 'AgentFailed', message: 'boom' },
        });
        expect(done).toMatchObject({ status: 'failed', error: { name: 'AgentFailed', message: 'boom' } });
        expect(done.finishedAt).toBe(done.updatedAt);
        expect(await t.another().get('c1', 'r1')).toEqual(done);
        expect(await t.another().current('c1')).toBeUndefined();
        // A retried finish returns the record as it is; a contradicting one is refused.
        expect(await t.another().finish('c1', 'r1', { status: 'failed' })).toEqual(done);
        await expect(s.finish('c1', 'r1', { status: 'succeeded' })).rejects.toBeInstanceOf(InvalidInputError);
        await expect(s.recordStep('c1', 'r1', 'late', 1)).rejects.toThrow(/finished \(failed\)/);
        await expect(s.setSnapshotOnce('c1', 'r1', {})).rejects.toThrow(/finished \(failed\)/);
        await expect(s.finish('c1', 'r1', { status: 'running' as never })).rejects.toBeInstanceOf(
          InvalidInputError,
        );
        // The cluster is free for a new run; the finished id cannot be reused, and trying takes nothing.
        await expect(s.begin(upgrade('r1'))).rejects.toThrow(/a new run needs a new run id/);
        expect(await s.current('c1')).toBeUndefined();
        await expect(s.begin(upgrade('r2'))).resolves.toMatchObject({ runId: 'r2', status: 'running' });
        expect((await s.current('c1'))?.runId).toBe('r2');
      });

      it('records a rolled-back run with its error, and frees the cluster', async () => {
        const s = store();
        await s.begin(upgrade('r1'));
        await s.setSnapshotOnce('c1', 'r1', { nodes: 3 });
        const done = await s.finish('c1', 'r1', {
          status: 'rolled-back',
          error: { name: 'VerificationFailed', message: 'providerID lost on worker-1' },
          summary: { restored: 3 },
        });
        expect(done).toMatchObject({
          status: 'rolled-back',
          error: { name: 'VerificationFailed' },
          summary: { restored: 3 },
          snapshot: { nodes: 3 },
        });
        expect(await t.another().list('c1')).toEqual([done]);
        expect(await s.current('c1')).toBeUndefined();
        await expect(s.begin({ ...upgrade('r2'), kind: 'downgrade' })).resolves.toMatchObject({
          kind: 'downgrade',
        });
      });

      it('does not release the cluster from a run that finishes while another holds it', async () => {
        const s = store();
        await s.begin(upgrade('r1', 'c2'));
        await s.begin(upgrade('r1'));
        await s.finish('c1', 'r1', { status: 'succeeded' });
        await s.begin(upgrade('r2'));
        // r1 of c2 finishing touches nothing of c1; finishing r1 of c1 again leaves r2 holding c1.
        await s.finish('c2', 'r1', { status: 'succeeded' });
        await s.finish('c1', 'r1', { status: 'succeeded' });
        expect((await t.another().current('c1'))?.runId).toBe('r2');
      });
    });

    describe('list', () => {
      it('returns a cluster’s runs oldest first, whatever their ids', async () => {
        const s = store();
        for (const runId of ['zeta', 'alpha', 'mid', 'alpha-2']) {
          await s.begin(upgrade(runId));
          await s.recordStep('c1', runId, 'preflight', { runId });
          await s.finish('c1', runId, { status: 'succeeded' });
        }
        await s.begin(upgrade('other', 'c2'));
        const runs = await t.another().list('c1');
        expect(runs.map((r) => r.runId)).toEqual(['zeta', 'alpha', 'mid', 'alpha-2']);
        expect(runs.map((r) => r.steps.preflight?.result)).toEqual(runs.map((r) => ({ runId: r.runId })));
        expect((await s.list('c2')).map((r) => r.runId)).toEqual(['other']);
        expect(await s.list('c3')).toEqual([]);
      });
    });
  });
}
