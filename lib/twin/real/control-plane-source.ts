/**
 * Where a real-API twin gets its etcd, kube-apiserver and certificates: started for it, in its state
 * directory, or (with prefetching on, as the test suite turns it on) taken ready from one that started in
 * the background while the previous twin of the same version ran. A start costs seconds (etcd, then
 * kube-apiserver's bootstrap behind /readyz, mostly waiting) and a test file starts dozens of twins one
 * after another. Each control plane serves one twin only: a twin starts from its spec, never from what
 * another left in etcd.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RealBinaries } from './binaries.ts';
import { type RealControlPlane, startRealControlPlane } from './control-plane.ts';
import { type ClusterPki, createClusterPki } from './pki.ts';

export interface StartedControlPlane {
  readonly controlPlane: RealControlPlane;
  readonly pki: ClusterPki;
}

let prefetching = false;
/** Ready control planes by binaries, each started for the next twin that asks. */
const early = new Map<string, Promise<StartedControlPlane>>();
/** Directories of control planes started ahead, removed with them or, unused, when this process exits. */
const aheadDirs = new Set<string>();
process.on('exit', () => {
  for (const dir of aheadDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** From now on, every twin's start also starts the next twin's control plane (tests only). */
export function prefetchControlPlanes(): void {
  prefetching = true;
}

/** Stop the control planes started ahead that no twin took (at the end of a test file). */
export async function stopPrefetchedControlPlanes(): Promise<void> {
  const pending = [...early.values()];
  early.clear();
  await Promise.all(pending.map((p) => p.then((s) => s.controlPlane.stop()).catch(() => {})));
}

async function startIn(binaries: RealBinaries, dir: string): Promise<StartedControlPlane> {
  const pki = createClusterPki(path.join(dir, 'pki'));
  const controlPlane = await startRealControlPlane({ binaries, pki, dir: path.join(dir, 'control-plane') });
  return { controlPlane, pki };
}

/** A control plane in a directory of its own, removed when it stops. */
async function startAhead(binaries: RealBinaries): Promise<StartedControlPlane> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ccm-migrate-control-plane-'));
  aheadDirs.add(dir);
  const removeDir = (): void => {
    aheadDirs.delete(dir);
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    const started = await startIn(binaries, dir);
    return {
      ...started,
      controlPlane: {
        ...started.controlPlane,
        stop: async () => {
          await started.controlPlane.stop();
          removeDir();
        },
      },
    };
  } catch (err) {
    removeDir();
    throw err;
  }
}

/**
 * A started control plane of these binaries for one twin: the one started ahead when there is one, else
 * one started now in `dir`. A start ahead that failed is not reported: the twin starts its own, whose
 * error it reports.
 */
export async function takeControlPlane(binaries: RealBinaries, dir: string): Promise<StartedControlPlane> {
  const key = `${binaries.apiServer}\n${binaries.etcd}`;
  const ready = early.get(key);
  early.delete(key);
  const taken = (await ready?.catch(() => undefined)) ?? (await startIn(binaries, dir));
  if (prefetching) {
    const next = startAhead(binaries);
    next.catch(() => {});
    early.set(key, next);
  }
  return taken;
}
