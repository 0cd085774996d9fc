/**
 * LocalRunStore on real temporary directories: the shared RunStore contract (contract.ts), and what is the
 * file store's own: its paths, the lock raced by separate processes, and what a killed process leaves behind.
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
import { describeRunStoreContract, rejection, upgrade } from './contract.ts';

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

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-store-'));
  clock = Date.parse('2026-01-01T00:00:00Z');
});
const contractDirs: string[] = [];
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  for (const d of contractDirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describeRunStoreContract('LocalRunStore', async (now) => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-store-'));
  contractDirs.push(root);
  return { store: () => new LocalRunStore(root, { now }), another: () => new LocalRunStore(root) };
});

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

  it('refuses ids that are not DNS labels without touching the directory', async () => {
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

describe('finish', () => {
  it('removes the lock file, and a reused finished id leaves none', async () => {
    const s = store();
    await s.begin(upgrade('r1'));
    await s.finish('c1', 'r1', { status: 'failed' });
    await expect(readFile(lockFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(s.begin(upgrade('r1'))).rejects.toThrow(/a new run needs a new run id/);
    await expect(readFile(lockFile())).rejects.toMatchObject({ code: 'ENOENT' });
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
