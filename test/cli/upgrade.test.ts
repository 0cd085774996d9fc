/**
 * `ccm-migrate upgrade` and `demo` as a user runs them: a child process, its output and exit code. Bad
 * input gets one clear line, a documented exit code, no stack trace, and no change to any cluster.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';

const BIN = fileURLToPath(new URL('../../bin/ccm-migrate.js', import.meta.url));
const SPEC = fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url));

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function cli(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? -1) : 0;
      resolve({ code: typeof code === 'number' ? code : -1, out: `${stdout}${stderr}` });
    });
  });
}

async function kubeconfig(server: string): Promise<string> {
  dir ??= await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-upgrade-'));
  const file = path.join(dir, 'kubeconfig');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: secret-token-value}}]',
      'contexts: [{name: ctx, context: {cluster: c, user: u}}]',
      'current-context: ctx',
    ].join('\n'),
  );
  return file;
}

function expectOneCleanLine(out: string): void {
  expect(out).not.toMatch(/\n\s+at /);
  expect(out).not.toContain('secret-token-value');
}

/** `upgrade --cluster-id ID --kubeconfig <one for server> --yes` and any further flags. */
async function upgrade(server: string, ...extra: string[]): Promise<{ code: number; out: string }> {
  return cli(['upgrade', '--cluster-id', 'c1', '--kubeconfig', await kubeconfig(server), '--yes', ...extra]);
}

describe('ccm-migrate upgrade, bad input', () => {
  it('names the endpoint it cannot reach, exits 4 and changes nothing', async () => {
    const { code, out } = await upgrade('http://127.0.0.1:9');
    expect(code).toBe(EXIT.unreachable);
    expect(out).toContain('http://127.0.0.1:9');
    expectOneCleanLine(out);
  });

  it('lists the contexts there are when asked for an unknown one (exit 2)', async () => {
    const { code, out } = await upgrade('http://127.0.0.1:9', '--context', 'prod');
    expect(code).toBe(EXIT.badInput);
    expect(out).toContain('no context "prod" (it has: ctx)');
    expectOneCleanLine(out);
  });

  it('refuses a kubeconfig that does not parse (exit 2), naming the file only', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-upgrade-'));
    const file = path.join(dir, 'broken');
    await writeFile(file, 'clusters: [ {{ token: secret-token-value');
    const { code, out } = await cli(['upgrade', '--cluster-id', 'c1', '--kubeconfig', file, '--yes']);
    expect(code).toBe(EXIT.badInput);
    expect(out).toContain(file);
    expectOneCleanLine(out);
  });

  it('refuses a cluster id that cannot name runs and Jobs (exit 2)', async () => {
    const { code, out } = await upgrade('http://127.0.0.1:9', '--cluster-id', 'Prod_1');
    expect(code).toBe(EXIT.badInput);
    expect(out).toContain('--cluster-id');
    expectOneCleanLine(out);
  });
});

describe('ccm-migrate demo', () => {
  it('migrates a twin end to end and prints the summary and the invariants', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-demo-'));
    const { code, out } = await cli(['demo', '--spec', SPEC, '--state-dir', dir]);
    expect(out).toContain('upgrade succeeded');
    expect(out).toMatch(/state transitions: +\d+/);
    expect(out).toMatch(/two cloud controllers: +0/);
    expect(code).toBe(EXIT.ok);
  });
});
