/**
 * Which process drives a cluster's runs in local mode: `<dir>/clusters/<clusterId>/driver`, {pid, host}.
 * A run started again resumes the cluster's unfinished run (its lock's runId), which is right after the
 * process that ran it died, and wrong while it still runs: a second `ccm-migrate upgrade` in another
 * terminal would drive the same steps at once. A claim held by a live process on this host is
 * ClusterLocked; one of a dead process (killed, the laptop rebooted) or of this very process is taken over.
 * Another host's claim cannot be checked and is taken over, as before this file existed.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as z from 'zod';
import { ClusterLockedError } from '../errors.ts';
import { processAlive } from '../process-alive.ts';

const DriverSchema = z.object({ pid: z.int().positive(), host: z.string() });
type Driver = z.infer<typeof DriverSchema>;

async function currentDriver(file: string): Promise<Driver | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = DriverSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    // A claim cut while written (killed between create and write): nobody holds it.
    return undefined;
  }
}

/** Claim the cluster for this process; the returned function releases it (if still this process's). */
export async function claimDriver(clusterDir: string, clusterId: string): Promise<() => Promise<void>> {
  const file = path.join(clusterDir, 'driver');
  const me: Driver = { pid: process.pid, host: os.hostname() };
  await mkdir(clusterDir, { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(file, JSON.stringify(me), { flag: 'wx', mode: 0o600 });
      return async () => {
        const holder = await currentDriver(file);
        if (holder?.pid === me.pid && holder.host === me.host) await rm(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await currentDriver(file);
    if (holder && holder.host === me.host && holder.pid !== me.pid && processAlive(holder.pid)) {
      throw new ClusterLockedError(
        `cluster ${clusterId} is being migrated by process ${holder.pid} on this host: wait for it to end, or stop it and run again to resume (if no such run is active, remove ${file})`,
      );
    }
    await rm(file, { force: true });
  }
  throw new ClusterLockedError(`cluster ${clusterId}: its driver keeps changing; try again`);
}
