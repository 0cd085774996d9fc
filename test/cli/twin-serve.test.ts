/**
 * `ccm-migrate twin serve` as a user runs it: a child process that writes a kubeconfig once the twin
 * answers, serves kubectl, and stops cleanly on SIGTERM; bad input gets one clear line and exit code 2.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BIN, commandProcesses } from './cli-process.ts';

const run = promisify(execFile);
const SPEC = fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url));
const HA_SPEC = fileURLToPath(new URL('../fixtures/twins/aws-ha-mini.yaml', import.meta.url));
const KUBECTL = '/usr/bin/kubectl';

let dir: string | undefined;
const { startUntil } = commandProcesses();
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('ccm-migrate twin serve', () => {
  it('serves a twin that kubectl reaches through the written kubeconfig, and stops on SIGTERM', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-'));
    const stateDir = path.join(dir, 'state');
    const served = await startUntil(['twin', 'serve', '--spec', SPEC, '--state-dir', stateDir], 'Ctrl-C');
    const kubeconfig = path.join(stateDir, 'kubeconfig');
    expect(served.out()).toContain(kubeconfig);
    expect(existsSync(kubeconfig)).toBe(true);
    if (existsSync(KUBECTL)) {
      const { stdout } = await run(KUBECTL, ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'name']);
      expect(stdout.trim().split('\n').sort()).toEqual(['node/cp-1', 'node/worker-1', 'node/worker-2']);
    }
    served.process.kill('SIGTERM');
    expect(await served.exit).toBe(0);
    expect(served.out()).toContain('twin stopped');
  });

  it('writes a kubeconfig per control-plane node whose server is that node’s own address', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-'));
    const stateDir = path.join(dir, 'state');
    const served = await startUntil(['twin', 'serve', '--spec', HA_SPEC, '--state-dir', stateDir], 'Ctrl-C');
    for (const node of ['cp-1', 'cp-2', 'cp-3']) {
      const file = path.join(stateDir, `kubeconfig-${node}`);
      expect(served.out()).toContain(`${file} (through ${node} alone`);
      const cluster = parse(await readFile(file, 'utf8')).clusters[0].cluster;
      expect(cluster['proxy-url']).toMatch(/^socks5:\/\/127\.0\.0\.1:\d+$/);
      if (!existsSync(KUBECTL)) continue;
      // kubectl reaches the API through the node's address, and that address is the node's InternalIP.
      const { stdout } = await run(KUBECTL, [
        '--kubeconfig',
        file,
        'get',
        'node',
        node,
        '-o',
        'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}',
      ]);
      expect(new URL(cluster.server).hostname).toBe(stdout.trim());
    }
    expect(existsSync(path.join(stateDir, 'kubeconfig-worker-1'))).toBe(false);
    served.process.kill('SIGTERM');
    expect(await served.exit).toBe(0);
  });

  it('rejects a bad spec with the field path and exit code 2, without a stack trace', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-'));
    const bad = path.join(dir, 'bad.yaml');
    await writeFile(bad, 'kind: ClusterTwin\nname: x\nkubernetesVersion: 1.26\n');
    const result = await run(process.execPath, [BIN, 'twin', 'serve', '--spec', bad]).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('kubernetesVersion');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('documents every subcommand with --help', async () => {
    for (const args of [['--help'], ['twin', '--help'], ['twin', 'serve', '--help'], ['demo', '--help']]) {
      const { stdout } = await run(process.execPath, [BIN, ...args]);
      expect(stdout).toMatch(/^Usage: ccm-migrate/);
    }
  });
});
