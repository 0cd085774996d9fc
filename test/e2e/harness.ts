/**
 * End-to-end support: a twin from a fixture, a run store in a temp dir, and the upgrade run by the local
 * engine over the real synthesized ASL, with waits sized for the twin's millisecond latencies.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  type MigrationRunOptions,
  type MigrationRunResult,
  runDowngradeLocally,
  runUpgradeLocally,
} from '../../lib/local/migration.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import { DOWNGRADE_STATES } from '../../state-machines/downgrade.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { eventually, startTestTwin, type TestTwin } from '../twin/running-twin.ts';

export interface E2E {
  readonly t: TestTwin;
  readonly store: LocalRunStore;
  upgrade(extra?: Partial<MigrationRunOptions>): Promise<MigrationRunResult>;
  downgrade(extra?: Partial<MigrationRunOptions>): Promise<MigrationRunResult>;
  stop(): Promise<void>;
}

/** Retries pause 20 ms instead of the definition's seconds: the twin answers in milliseconds. */
export const FAST_RETRIES = Object.fromEntries(
  [...Object.values(UPGRADE_STATES), ...Object.values(DOWNGRADE_STATES)].map((s) => [s, 20]),
);

/** `realApi`: the twin on a real kube-apiserver (test/real-api.ts says when that runs). */
export async function startE2E(spec: TwinSpec, opts: { realApi?: boolean } = {}): Promise<E2E> {
  const t = await startTestTwin(spec, { realApi: opts.realApi ?? false });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-e2e-store-'));
  const store = new LocalRunStore(dir);
  const fast = (): MigrationRunOptions => ({
    clients: t,
    store,
    clusterId: spec.name,
    waitMs: 10_000,
    pollMs: 10,
    retryIntervalOverrides: FAST_RETRIES,
  });
  return {
    t,
    store,
    upgrade: (extra = {}) => runUpgradeLocally({ ...fast(), ...extra }),
    downgrade: (extra = {}) => runDowngradeLocally({ ...fast(), ...extra }),
    stop: async () => {
      await t.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Every file under every node's directory: path → sha256 and mtime, to prove a run wrote nothing. */
export async function nodeFiles(t: TestTwin): Promise<Map<string, string>> {
  const root = path.join(t.twin.stateDir, 'nodes');
  const out = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else {
        const [bytes, info] = await Promise.all([readFile(full), stat(full)]);
        out.set(
          path.relative(root, full),
          `${createHash('sha256').update(bytes).digest('hex')} ${info.mtimeMs}`,
        );
      }
    }
  };
  await walk(root);
  return out;
}

/** Node files as they were at the start: what a way back must give back byte for byte. */
export function originalsOnly(files: Map<string, string>, start: Map<string, string>): Map<string, string> {
  return new Map(
    [...files].filter(([file]) => start.has(file)).map(([file, v]) => [file, v.split(' ')[0] ?? '']),
  );
}

/** Wait until no CCM pod is left on the twin (scaled to zero, staged on no node, or deleted). */
export async function ccmPodsGone(t: TestTwin): Promise<void> {
  await eventually(
    async () =>
      (
        await t.core.listNamespacedPod({
          namespace: 'kube-system',
          labelSelector: 'app.kubernetes.io/component=cloud-controller-manager',
        })
      ).items.length === 0,
    { what: 'no CCM pod left' },
  );
}
