/**
 * `npm run setup:kube` as a newcomer meets it: a clear line and exit code for no Go, a bad version and a
 * version the module proxy does not serve; and a second run over a built cache that builds nothing.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { builtApiServers, ETCD_VERSION, etcdPath, twinSpecVersions } from '../../lib/twin/real/binaries.ts';
import { realApiMissing } from '../real-api.ts';

const SETUP = fileURLToPath(new URL('../../tools/kube/setup.ts', import.meta.url));

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

function setup(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  const proc = spawn(process.execPath, [SETUP, ...args], { env: { ...process.env, ...env } });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  proc.stderr.on('data', (c: Buffer) => {
    out += c.toString();
  });
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code: code ?? -1, out })));
}

describe('npm run setup:kube', () => {
  it('says there is no Go toolchain, where it looked and how to get one (exit 2)', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-setup-'));
    const { code, out } = await setup([], { CCM_MIGRATE_GO: '/nonexistent/go', CCM_MIGRATE_KUBE_DIR: dir });
    expect(code).toBe(2);
    expect(out).toContain('the Go toolchain was not found (tried /nonexistent/go)');
    expect(out).toContain('https://go.dev/dl/');
    expect(out).not.toMatch(/\n\s+at /);
  });

  it('refuses a version that is not one, before anything runs (exit 2)', async () => {
    const { code, out } = await setup(['--version', '1.26'], { CCM_MIGRATE_KUBE_DIR: '/nonexistent' });
    expect(code).toBe(2);
    expect(out).toContain('not a Kubernetes version: v1.26 (expected e.g. v1.26.15)');
  });

  it.runIf(!realApiMissing())(
    'says the module proxy does not serve a version, and leaves no binary (exit 1)',
    async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-setup-'));
      // etcd taken from the real cache, so that only the kube-apiserver step runs.
      mkdirSync(path.join(dir, 'bin', `etcd-${ETCD_VERSION}`), { recursive: true });
      symlinkSync(etcdPath(), path.join(dir, 'bin', `etcd-${ETCD_VERSION}`, 'etcd'));
      const { code, out } = await setup(['--version', 'v1.99.0'], { CCM_MIGRATE_KUBE_DIR: dir });
      expect(code).toBe(1);
      expect(out).toContain('the Go module proxy did not serve k8s.io/kubernetes@v1.99.0');
      expect(out).not.toMatch(/\n\s+at /);
    },
    120_000,
  );

  // A partly built cache would make this run build the rest: it runs only over a complete one.
  const everyVersionBuilt = twinSpecVersions().every((v) => builtApiServers().includes(v));
  it.runIf(!realApiMissing() && everyVersionBuilt)(
    'builds nothing on a second run over a built cache',
    async () => {
      const { code, out } = await setup([], {});
      expect(code).toBe(0);
      expect(out).toMatch(/etcd v3\.5\.\d+: present/);
      expect(out).toMatch(/kube-apiserver v1\.30\.14: present/);
      expect(out).not.toContain('building');
    },
    120_000,
  );
});
