/**
 * `ccm-migrate twin serve --real-api` as a user runs it: each example spec served from a real
 * kube-apiserver, kubectl against it, then `ccm-migrate upgrade` and `downgrade` as commands through the
 * kubeconfig it writes; and the ways a start goes wrong (a port taken, no binaries, an etcd that will not
 * start, a control plane that can never come up), each one line and nothing left running.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { builtApiServers, ETCD_VERSION, kubeCacheDir } from '../../lib/twin/real/binaries.ts';
import { loadTwinSpec, nodeNames } from '../../lib/twin/spec.ts';
import { realApiRuns } from '../real-api.ts';
import { BIN, commandProcesses } from './cli-process.ts';

const run = promisify(execFile);
const EXAMPLES = fileURLToPath(new URL('../../assets/twins/', import.meta.url));
const GCP_MINI = fileURLToPath(new URL('../fixtures/twins/gcp-mini.yaml', import.meta.url));
const KUBECTL = '/usr/bin/kubectl';

let dir: string | undefined;
const { startUntil, runToEnd: failing } = commandProcesses();
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Processes whose command line names this directory (the etcd and kube-apiserver of a twin in it). */
async function processesIn(where: string): Promise<string[]> {
  const { stdout } = await run('ps', ['-eo', 'args']).catch(() => ({ stdout: '' }));
  return stdout.split('\n').filter((l) => l.includes(where) && !l.startsWith('ps '));
}

/** sha256 of every node file under a twin's state dir. */
function nodeFileHashes(stateDir: string): Map<string, string> {
  const root = path.join(stateDir, 'nodes');
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else out.set(path.relative(root, full), createHash('sha256').update(readFileSync(full)).digest('hex'));
    }
  };
  walk(root);
  return out;
}

/**
 * The invariant monitor's intervals other than the API being unavailable (which restarts cause) that began
 * at or after `since` (a cluster external from birth has tainted nodes and no controller before its install).
 */
function cloudControllerViolations(stateDir: string, since: Date): string[] {
  const file = path.join(stateDir, 'invariants.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.includes('"api-unavailable"'))
    .filter((l) => Date.parse((JSON.parse(l) as { start: string }).start) >= since.getTime());
}

function freePort(): Promise<{ port: number; server: net.Server }> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as net.AddressInfo).port, server }),
    );
  });
}

/**
 * The example spec with the test fixtures' millisecond latencies (its nodes, files and objects as they
 * are; `file:` references made absolute), so a run waits for behaviour, not for time.
 */
function fastCopy(example: string, into: string): string {
  const absolute = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(absolute);
    if (!value || typeof value !== 'object') return value;
    const entries = Object.entries(value);
    if (entries.length === 1 && entries[0]?.[0] === 'file' && typeof entries[0][1] === 'string') {
      return { file: path.resolve(path.dirname(example), entries[0][1]) };
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, absolute(v)]));
  };
  const doc = absolute(parseYaml(readFileSync(example, 'utf8'))) as Record<string, unknown>;
  doc.latencies = {
    staticPodRestart: '30ms',
    kubeletRestart: '20ms',
    podStart: '10ms',
    nodeInit: '5ms',
    fileCheck: '10ms',
    jobStart: '5ms',
    leaseDuration: '1s',
  };
  const out = path.join(into, path.basename(example));
  writeFileSync(out, stringifyYaml(doc));
  return out;
}

const examples = readdirSync(EXAMPLES)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
/**
 * The specs also migrated here, through the commands: the demo's HA cluster (leader migration) and Azure's
 * (its cloud-node-manager, 1.29's gates). Every provider's migration runs on the real server in
 * test/e2e/providers.test.ts; here the others are served and read with kubectl, which is what only this
 * test checks of them.
 */
const MIGRATED = new Set(['aws-ha.yaml', 'azure.yaml']);

describe.runIf(realApiRuns())('ccm-migrate twin serve --real-api', () => {
  it.each(examples)(
    'serves %s from a real kube-apiserver; kubectl works; where migrated, upgrade then downgrade leave every file and no violation',
    async (file) => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-real-cli-'));
      const specFile = fastCopy(path.join(EXAMPLES, file), dir);
      const spec = await loadTwinSpec(specFile);
      const stateDir = path.join(dir, 'twin');
      const served = await startUntil(
        ['twin', 'serve', '--real-api', '--spec', specFile, '--state-dir', stateDir],
        'Ctrl-C',
      );
      expect(served.out()).toMatch(/a real kube-apiserver v1\.\d+\.\d+ and etcd/);
      const kubeconfig = path.join(stateDir, 'kubeconfig');
      const kubectl = (...args: string[]) => run(KUBECTL, ['--kubeconfig', kubeconfig, ...args]);
      const version = JSON.parse((await kubectl('version', '-o', 'json')).stdout) as {
        serverVersion: { gitVersion: string; goVersion: string };
      };
      expect(version.serverVersion.gitVersion).toMatch(
        new RegExp(`^${spec.kubernetesVersion.replace(/\.\d+$/, '')}\\.`),
      );
      // Only a real server runs etcd and the RBAC bootstrap behind its health checks.
      const livez = (await kubectl('get', '--raw', '/livez?verbose')).stdout;
      expect(livez).toContain('[+]etcd ok');
      expect(livez).toContain('[+]poststarthook/rbac/bootstrap-roles ok');
      const { stdout: nodes } = await kubectl('get', 'nodes', '-o', 'name');
      expect(nodes.trim().split('\n')).toHaveLength(
        spec.nodeGroups.reduce((n, g) => n + nodeNames(g).length, 0),
      );

      const stop = async () => {
        served.process.kill('SIGTERM');
        expect(await served.exit).toBe(0);
        expect(await processesIn(stateDir)).toEqual([]);
      };
      if (!MIGRATED.has(file)) return stop();
      const start = nodeFileHashes(stateDir);
      const runs = path.join(dir, 'runs');
      const common = ['--cluster-id', spec.name, '--kubeconfig', kubeconfig, '--state-dir', runs, '--yes'];
      const provider = spec.cloud.provider === 'ibm' ? ['--provider', 'ibm'] : [];
      const upgradeStarted = new Date();
      await run(process.execPath, [BIN, 'upgrade', ...common, ...provider]);
      if (spec.cloud.provider !== 'ibm') {
        await run(process.execPath, [BIN, 'downgrade', ...common]);
        // Every file as it was; the agent's backups beside them stay.
        const now = nodeFileHashes(stateDir);
        expect(new Map([...now].filter(([f]) => start.has(f)))).toEqual(start);
      }
      expect(cloudControllerViolations(stateDir, upgradeStarted)).toEqual([]);
      await stop();
    },
    180_000,
  );

  it('says the port is in use, exits non-zero, and leaves no etcd or kube-apiserver running', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-real-cli-'));
    const { port, server } = await freePort();
    try {
      const stateDir = path.join(dir, 'twin');
      const result = await failing([
        'twin',
        'serve',
        '--real-api',
        '--spec',
        GCP_MINI,
        '--state-dir',
        stateDir,
        '--port',
        String(port),
      ]);
      expect(result.code).not.toBe(0);
      expect(result.out).toContain(`127.0.0.1:${port}: the port is in use`);
      expect(result.out).not.toMatch(/\n\s+at /);
      expect(await processesIn(stateDir)).toEqual([]);
    } finally {
      server.close();
    }
  }, 60_000);

  it('says an etcd that will not start, with its own words, and leaves nothing running', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-real-cli-'));
    // A cache whose etcd exits at once, as one whose port or data dir is refused does.
    const cache = path.join(dir, 'kube');
    const etcdDir = path.join(cache, 'bin', `etcd-${ETCD_VERSION}`);
    mkdirSync(etcdDir, { recursive: true });
    writeFileSync(
      path.join(etcdDir, 'etcd'),
      '#!/bin/sh\necho "etcdmain: listen tcp 127.0.0.1:2380: bind: address already in use" >&2\nexit 1\n',
    );
    chmodSync(path.join(etcdDir, 'etcd'), 0o755);
    for (const v of builtApiServers()) {
      mkdirSync(path.join(cache, 'bin', v), { recursive: true });
      symlinkSync(
        path.join(kubeCacheDir(), 'bin', v, 'kube-apiserver'),
        path.join(cache, 'bin', v, 'kube-apiserver'),
      );
    }
    const stateDir = path.join(dir, 'twin');
    const result = await failing(
      ['twin', 'serve', '--real-api', '--spec', GCP_MINI, '--state-dir', stateDir],
      {
        ...process.env,
        CCM_MIGRATE_KUBE_DIR: cache,
      },
    );
    expect(result.code).not.toBe(0);
    expect(result.out).toContain('etcd exited while starting');
    expect(result.out).toContain('bind: address already in use');
    expect(result.out).not.toMatch(/\n\s+at /);
    expect(await processesIn(stateDir)).toEqual([]);
  }, 60_000);
});

describe('ccm-migrate twin serve, what it cannot start', () => {
  it('names the command that builds a missing kube-apiserver (exit 2)', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-real-cli-'));
    const result = await failing(
      ['twin', 'serve', '--real-api', '--spec', GCP_MINI, '--state-dir', path.join(dir, 't')],
      {
        ...process.env,
        CCM_MIGRATE_KUBE_DIR: path.join(dir, 'empty'),
      },
    );
    expect(result.code).toBe(2);
    expect(result.out).toContain('npm run setup:kube -- --version v1.30.14');
    expect(result.out).not.toMatch(/\n\s+at /);
  });

  it.each(realApiRuns() ? ['in-process', 'real-API'] : ['in-process'])(
    'says within seconds which node, component and flag keep the control plane down (%s twin)',
    async (kind) => {
      const extra = kind === 'real-API' ? ['--real-api'] : [];
      dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-real-cli-'));
      // The example GCP kubelet on 1.30 without DisableCloudProviders=false: it exits at start, everywhere.
      const spec = readFileSync(GCP_MINI, 'utf8').replaceAll('../../../assets', path.join(EXAMPLES, '..'));
      const flags = readFileSync(
        path.join(EXAMPLES, 'hosts/kubeadm-v1.30-gce/var/lib/kubelet/kubeadm-flags.env'),
        'utf8',
      );
      writeFileSync(path.join(dir, 'kubeadm-flags.env'), flags.replace(/ --feature-gates=\S+/, ''));
      const edited = spec.replaceAll(
        `file: ${path.join(EXAMPLES, '..')}/twins/hosts/kubeadm-v1.30-gce/var/lib/kubelet/kubeadm-flags.env`,
        `file: ${path.join(dir, 'kubeadm-flags.env')}`,
      );
      writeFileSync(path.join(dir, 'spec.yaml'), edited);
      const stateDir = path.join(dir, 't');
      const result = await failing([
        'twin',
        'serve',
        ...extra,
        '--spec',
        path.join(dir, 'spec.yaml'),
        '--state-dir',
        stateDir,
      ]);
      expect(result.code).not.toBe(0);
      expect(result.out).toContain('the control plane cannot come up: cp-1: the kubelet exits at start');
      expect(result.out).toContain(
        'cloud provider "gce" was specified, but built-in cloud providers are disabled',
      );
      expect(result.out).not.toMatch(/\n\s+at /);
      expect(await processesIn(stateDir)).toEqual([]);
    },
    30_000,
  );
});
