/**
 * LocalRunStore on real temporary directories: begin/resume/lock, the lock raced by store instances and by
 * separate processes, first snapshot wins, concurrent step records, finish, list order, and what a killed
 * process leaves behind.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClusterLockedError, InvalidInputError } from '../../lib/errors.ts';
import { defaultStateDir, LocalRunStore } from '../../lib/store/local-store.ts';
import { RunRecordSchema } from '../../lib/store/run-record.ts';

let dir: string;
let clock: number;
/** A store whose clock advances one second per reading, so that every timestamp differs. */
const store = () =>
  new LocalRunStore(dir, {
    now: () => {
      clock += 1000;
      return new Date(clock);
    },
  });
const upgrade = (runId: string, clusterId = 'c1') => ({ clusterId, runId, kind: 'upgrade' as const });

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-store-'));
  clock = Date.parse('2026-01-01T00:00:00Z');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The error a promise rejects with (the test fails if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (err: unknown) => ({ err }),
  );
  if (!('err' in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  return outcome.err as Error;
}

const runFile = (runId: string, clusterId = 'c1') =>
  path.join(dir, 'clusters', clusterId, 'runs', `${runId}.json`);
const lockFile = (clusterId = 'c1') => path.join(dir, 'clusters', clusterId, 'current');

describe('begin', () => {
  it('creates a running record and the cluster lock at the documented paths', async () => {
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
    expect(RunRecordSchema.parse(JSON.parse(await readFile(runFile('r1'), 'utf8')))).toEqual(record);
    expect(JSON.parse(await readFile(lockFile(), 'utf8'))).toEqual({
      runId: 'r1',
      kind: 'upgrade',
      startedAt: record.startedAt,
    });
  });

  it('resumes the unfinished run with the same id, as it was', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    await s.recordStep('c1', 'r1', 'preflight', { ok: true });
    const again = await store().begin(upgrade('r1'));
    expect(again.startedAt).toBe('2026-01-01T00:00:01.000Z');
    expect(again.steps.preflight?.result).toEqual({ ok: true });
    await expect(store().begin({ ...upgrade('r1'), kind: 'downgrade' })).rejects.toThrow(
      /run r1 of cluster c1 is an upgrade, not a downgrade/,
    );
  });

  it('refuses another run while one holds the cluster, naming it and when it started', async () => {
    await store().begin(upgrade('r1'));
    const err = await rejection(store().begin(upgrade('r2')));
    expect(err).toBeInstanceOf(ClusterLockedError);
    expect(err.message).toContain('upgrade run r1, started 2026-01-01T00:00:01.000Z');
    // Other clusters are not held.
    await expect(store().begin(upgrade('r2', 'c2'))).resolves.toMatchObject({ status: 'running' });
  });

  it('refuses ids that are not DNS labels, without touching the directory', async () => {
    for (const bad of ['', 'R1', '../etc', 'a/b', '-a', 'a-', 'a_b', 'x'.repeat(64)]) {
      await expect(store().begin(upgrade(bad))).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store().begin(upgrade('r1', bad))).rejects.toBeInstanceOf(InvalidInputError);
    }
    await expect(store().begin({ ...upgrade('r1'), kind: 'sideways' as never })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(store().get('c1', 'R1')).rejects.toBeInstanceOf(InvalidInputError);
    expect(await readdir(dir)).toEqual([]);
    await expect(store().begin(upgrade('x'.repeat(63)))).resolves.toMatchObject({ runId: 'x'.repeat(63) });
  });

  it('lets exactly one of many racing store instances take the cluster', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => new LocalRunStore(dir).begin(upgrade(`r${i}`))),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    for (const err of lost) expect(err).toBeInstanceOf(ClusterLockedError);
    const winner = (won[0] as PromiseFulfilledResult<{ runId: string }>).value.runId;
    expect((await store().current('c1'))?.runId).toBe(winner);
    expect(await readdir(path.dirname(runFile('x')))).toEqual([`${winner}.json`]);
  });

  it('lets exactly one of several processes take the cluster', async () => {
    const module = fileURLToPath(new URL('../../lib/store/local-store.ts', import.meta.url));
    const script = `
      const { LocalRunStore } = await import(${JSON.stringify(module)});
      const [dir, runId, startAt] = process.argv.slice(1);
      await new Promise((r) => setTimeout(r, Number(startAt) - Date.now()));
      try {
        await new LocalRunStore(dir).begin({ clusterId: 'c1', runId, kind: 'upgrade' });
        console.log('won');
      } catch (err) {
        console.log(err.name);
      }`;
    // Each process waits for the same moment, so that their begins overlap.
    const startAt = String(Date.now() + 800);
    const run = promisify(execFile);
    const outputs = await Promise.all(
      ['p1', 'p2', 'p3', 'p4'].map((runId) =>
        run(process.execPath, ['--input-type=module', '-e', script, dir, runId, startAt]),
      ),
    );
    const answers = outputs.map((o) => o.stdout.trim()).sort();
    expect(answers).toEqual(['ClusterLocked', 'ClusterLocked', 'ClusterLocked', 'won']);
  });
});

describe('snapshots', () => {
  it('keeps the first snapshot written, and returns it to every later writer', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    expect(await s.setSnapshotOnce('c1', 'r1', { kcm: ['--cloud-provider=aws'] })).toEqual({
      kcm: ['--cloud-provider=aws'],
    });
    expect(await s.setSnapshotOnce('c1', 'r1', { kcm: [] })).toEqual({ kcm: ['--cloud-provider=aws'] });
    expect((await store().get('c1', 'r1'))?.snapshot).toEqual({ kcm: ['--cloud-provider=aws'] });
    await expect(s.setSnapshotOnce('c1', 'r1', undefined as never)).rejects.toThrow(
      /invalid snapshot of run r1/,
    );
  });

  it('gives every concurrent writer the same, stored snapshot', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => new LocalRunStore(dir).setSnapshotOnce('c1', 'r1', { writer: i })),
    );
    const stored = (await s.get('c1', 'r1'))?.snapshot;
    expect(stored).toBeDefined();
    for (const a of answers) expect(a).toEqual(stored);
  });
});

describe('concurrent changes in one process', () => {
  it('loses none of 50 step records written at once, across two store instances', async () => {
    await store().begin(upgrade('r1'));
    const a = store();
    const b = new LocalRunStore(dir);
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? a : b).recordStep('c1', 'r1', `kubelet/worker-${i}`, { node: `worker-${i}`, changed: true }),
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
      Array.from({ length: 10 }, () =>
        s.update('c1', 'r1', (r) => ({
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
    await expect(s.recordStep('c1', 'nope', 'x', 1)).rejects.toThrow(/cluster c1 has no run nope/);
  });
});

describe('finish', () => {
  it('ends the run, releases the cluster, and repeats harmlessly', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    expect((await s.current('c1'))?.runId).toBe('r1');
    const done = await s.finish('c1', 'r1', {
      status: 'failed',
      error: { name: 'AgentFailed', message: 'boom' },
    });
    expect(done).toMatchObject({ status: 'failed', error: { name: 'AgentFailed', message: 'boom' } });
    expect(done.finishedAt).toBe(done.updatedAt);
    expect(await s.current('c1')).toBeUndefined();
    await expect(readFile(lockFile())).rejects.toMatchObject({ code: 'ENOENT' });
    // A retried finish returns the record as it is; a contradicting one is refused.
    expect(await s.finish('c1', 'r1', { status: 'failed' })).toEqual(done);
    await expect(s.finish('c1', 'r1', { status: 'succeeded' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(s.recordStep('c1', 'r1', 'late', 1)).rejects.toThrow(/finished \(failed\)/);
    await expect(s.finish('c1', 'r1', { status: 'running' as never })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    // The cluster is free for a new run; the finished id cannot be reused, and trying leaves no lock.
    await expect(s.begin(upgrade('r1'))).rejects.toThrow(/a new run needs a new run id/);
    await expect(readFile(lockFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(s.begin(upgrade('r2'))).resolves.toMatchObject({ runId: 'r2', status: 'running' });
  });

  it('does not release a lock held by another run', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    // r0: a run whose finish was killed after it released the lock (its record still says running).
    await writeFile(runFile('r0'), JSON.stringify({ ...(await s.get('c1', 'r1')), runId: 'r0' }));
    await s.finish('c1', 'r0', { status: 'succeeded' });
    expect((await s.current('c1'))?.runId).toBe('r1');
  });
});

describe('list', () => {
  it('returns a cluster’s runs oldest first, whatever their ids', async () => {
    const s = store();
    for (const runId of ['zeta', 'alpha', 'mid']) {
      await s.begin(upgrade(runId));
      await s.finish('c1', runId, { status: 'succeeded' });
    }
    await s.begin(upgrade('other', 'c2'));
    expect((await s.list('c1')).map((r) => r.runId)).toEqual(['zeta', 'alpha', 'mid']);
    expect((await s.list('c2')).map((r) => r.runId)).toEqual(['other']);
    expect(await s.list('c3')).toEqual([]);
  });
});

describe('what a killed process leaves behind', () => {
  it('ignores truncated temp files of a record and of the lock', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    await s.recordStep('c1', 'r1', 'preflight', { ok: true });
    const before = await s.get('c1', 'r1');
    await writeFile(
      path.join(path.dirname(runFile('r1')), '.r1.json.1a2b3c4d'),
      '{"clusterId":"c1","runId":"r1","st',
    );
    await writeFile(path.join(path.dirname(lockFile()), '.current.0a0b0c0d0e0f'), '{"runId":"r');
    expect(await s.get('c1', 'r1')).toEqual(before);
    expect(await s.list('c1')).toEqual([before]);
    expect(await s.current('c1')).toEqual(before);
    await s.recordStep('c1', 'r1', 'stage-ccm', { changed: 6 });
    expect(Object.keys((await s.get('c1', 'r1'))?.steps ?? {})).toEqual(['preflight', 'stage-ccm']);
  });

  it('recovers a begin killed between taking the lock and writing the record', async () => {
    await mkdir(path.dirname(runFile('r1')), { recursive: true });
    const holder = { runId: 'r1', kind: 'upgrade', startedAt: '2026-01-01T00:00:00.000Z' };
    await writeFile(lockFile(), JSON.stringify(holder));
    expect(await store().current('c1')).toMatchObject({ ...holder, status: 'running', steps: {} });
    await expect(store().begin(upgrade('r2'))).rejects.toBeInstanceOf(ClusterLockedError);
    const resumed = await store().begin(upgrade('r1'));
    expect(resumed).toMatchObject({ ...holder, status: 'running' });
    expect(await store().get('c1', 'r1')).toEqual(resumed);
  });

  it('recovers a finish killed after it released the lock', async () => {
    const s = store();
    const begun = await s.begin(upgrade('r1'));
    await rm(lockFile());
    expect(await s.current('c1')).toBeUndefined();
    expect(await s.begin(upgrade('r1'))).toEqual(begun);
    expect((await s.finish('c1', 'r1', { status: 'succeeded' })).status).toBe('succeeded');
    expect(await s.current('c1')).toBeUndefined();
  });

  it('names a broken lock or record by its path, never by its contents', async () => {
    await mkdir(path.dirname(runFile('r1')), { recursive: true });
    await writeFile(lockFile(), 'token: s3cr3t');
    const locked = await rejection(store().begin(upgrade('r1')));
    expect(locked).toBeInstanceOf(ClusterLockedError);
    expect(locked.message).toContain(lockFile());
    expect(locked.message).not.toContain('s3cr3t');
    await rm(lockFile());
    await writeFile(runFile('r1'), 'password=s3cr3t');
    const broken = await rejection(store().get('c1', 'r1'));
    expect(broken).toBeInstanceOf(InvalidInputError);
    expect(broken.message).toContain(runFile('r1'));
    expect(broken.message).not.toContain('s3cr3t');
  });
});

describe('defaultStateDir', () => {
  it('is $CCM_MIGRATE_STATE_DIR, else ~/.ccm-migrate', () => {
    expect(defaultStateDir({ CCM_MIGRATE_STATE_DIR: '/var/lib/ccm' })).toBe('/var/lib/ccm');
    expect(defaultStateDir({})).toBe(path.join(os.homedir(), '.ccm-migrate'));
  });
});
