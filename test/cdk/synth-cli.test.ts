/**
 * `npx cdk synth` as a platform team runs it from a clean clone: the CLI, cdk.json's app, every function
 * bundled by the local esbuild (no Docker), no AWS credentials and no account lookups. The in-process
 * template tests skip bundling; this one builds what would be deployed (≈ 20 s on 2 vCPU).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { FUNCTION_IDS, PROJECT_ROOT } from '../../cdk/bundling.ts';

const run = promisify(execFile);
let out: string | undefined;
afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

describe('npx cdk synth', () => {
  it('synthesizes the stack offline, every function bundled as an ESM handler', async () => {
    out = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-synth-'));
    // No credentials, no profile, no region, no ~/.aws files: a synth that needed AWS would fail here.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
    const none = path.join(out, 'no-such-aws-file');
    await run(path.join(PROJECT_ROOT, 'node_modules/.bin/cdk'), ['synth', '--quiet', '-o', out], {
      cwd: PROJECT_ROOT,
      env: {
        ...env,
        CDK_DISABLE_VERSION_CHECK: '1',
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: none,
        AWS_SHARED_CREDENTIALS_FILE: none,
      },
      timeout: 180_000,
    });

    const template = JSON.parse(await readFile(path.join(out, 'CcmMigrate.template.json'), 'utf8'));
    const functions = Object.values(
      template.Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>,
    ).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.handler');
    expect(functions).toHaveLength(FUNCTION_IDS.length);
    for (const fn of functions) expect(fn.Properties.Runtime).toBe('nodejs22.x');

    // Each function's asset is a bundle: an index.mjs with its source map, nothing else to install.
    const assets = (await readdir(out)).filter((d) => d.startsWith('asset.'));
    const bundles: string[] = [];
    for (const asset of assets) {
      const files = await readdir(path.join(out, asset)).catch((): string[] => []);
      if (files.includes('index.mjs')) bundles.push(asset);
    }
    expect(bundles.length).toBeGreaterThanOrEqual(FUNCTION_IDS.length);
    for (const asset of bundles) {
      expect((await stat(path.join(out, asset, 'index.mjs'))).size).toBeGreaterThan(10_000);
      expect(await readdir(path.join(out, asset))).not.toContain('node_modules');
    }
  }, 240_000);
});
