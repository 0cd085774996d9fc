/**
 * A second `ccm-migrate upgrade` of a cluster whose run another live process still drives is refused
 * (ClusterLocked), where it used to resume that run and drive the same steps at once (the soak's second
 * request, issue 16); a run whose process died is resumed as before.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { LocalRunStore } from '../../lib/store/local-store.ts';

let dir: string;
let store: LocalRunStore;
const driverFile = () => path.join(dir, 'clusters', 'prod-eu-1', 'driver');

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-driver-'));
  store = new LocalRunStore(dir);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A process that lives until killed: another terminal's ccm-migrate, as far as the claim can tell. */
function otherProcess(): { pid: number; kill: () => void } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return { pid: child.pid as number, kill: () => child.kill('SIGKILL') };
}

it('refuses a claim that a live process on this host holds, naming it', async () => {
  const other = otherProcess();
  try {
    await store.claimDriver('prod-eu-1').then((release) => release());
    await writeFile(driverFile(), JSON.stringify({ pid: other.pid, host: os.hostname() }));
    await expect(store.claimDriver('prod-eu-1')).rejects.toMatchObject({
      name: 'ClusterLocked',
      message: expect.stringContaining(`process ${other.pid} on this host`),
    });
  } finally {
    other.kill();
  }
});

it('takes over the claim of a process that died, and releases its own', async () => {
  const other = otherProcess();
  other.kill();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await store.claimDriver('prod-eu-1').then((release) => release());
  await writeFile(driverFile(), JSON.stringify({ pid: other.pid, host: os.hostname() }));
  const release = await store.claimDriver('prod-eu-1');
  await release();
  // Released: claimed again at once.
  await (await store.claimDriver('prod-eu-1'))();
});

it('takes over a claim cut while it was written', async () => {
  await store.claimDriver('prod-eu-1').then((release) => release());
  await writeFile(driverFile(), '');
  await (await store.claimDriver('prod-eu-1'))();
});
