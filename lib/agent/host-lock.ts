/**
 * One agent at a time changes a node's files. A flip and its run's restore can reach a node together (a
 * node check that fails starts the rollback while other slots' flips are still in flight), and the restore
 * marker orders them only when a flip's look at the marker and its writes are not interleaved with a
 * restore: without the lock, a flip that found no marker could write after the restore and leave the
 * kubelet external after RolledBack.
 *
 * The lock is a directory made atomically (mkdir) under the host's /run (a tmpfs: a reboot, which ends
 * every holder, clears it; and a refused change leaves nothing on the node's disk), holding its owner's
 * pid. The agent's pod shares the host's PID namespace, so an owner that died mid-change (its pod killed)
 * is seen as dead and its lock taken over; in the twin every agent is the twin's own process and always
 * lets go.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../process-alive.ts';
import { onHost } from './files.ts';

export const HOST_LOCK_DIR = '/run/ccm-migrate/agent.lock';
const OWNER = 'owner';

async function ownerOf(dir: string): Promise<number | undefined> {
  const text = await readFile(path.join(dir, OWNER), 'utf8').catch(() => '');
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Run `work` holding the node's lock; waits up to `waitMs` for another agent to let go. */
export async function withHostLock<T>(
  hostRoot: string,
  work: () => Promise<T>,
  opts: { waitMs?: number; pollMs?: number } = {},
): Promise<T> {
  const { waitMs = 120_000, pollMs = 50 } = opts;
  const dir = onHost(hostRoot, HOST_LOCK_DIR);
  await mkdir(path.dirname(dir), { recursive: true });
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await mkdir(dir);
      await writeFile(path.join(dir, OWNER), `${process.pid}\n`);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // No owner written yet: the holder is between its mkdir and its write, alive.
    const owner = await ownerOf(dir);
    if (owner !== undefined && !processAlive(owner)) {
      await rm(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `another ccm-migrate agent has held this node's lock (${HOST_LOCK_DIR}, pid ${owner ?? 'unknown'}) for over ${waitMs / 1000} s`,
      );
    }
    await sleep(pollMs);
  }
  try {
    return await work();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
