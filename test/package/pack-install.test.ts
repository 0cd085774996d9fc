/**
 * ccm-migrate as a user gets it: `npm pack` (prepack builds dist/), the tarball installed into an empty
 * app (test/package/installed-app.ts), then what the README's install section promises, from there: the
 * CLI's `--version` and `demo` through npx, and a three-line CDK app that imports MigrationOrchestrator from
 * `ccm-migrate/cdk` and synthesizes, and a function bundled from the installed JavaScript as the stack
 * bundles each. One install serves the checks, which run at once (the demo mostly waits on its twin).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_IDS, PROJECT_ROOT } from '../../cdk/bundling.ts';
import { installInto, pack } from './installed-app.ts';

const run = promisify(execFile);
const VERSION = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).version;

let dir: string;
let app: string;
let files: string[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-pack-'));
  app = path.join(dir, 'app');
  await mkdir(app);
  const packed = await pack(PROJECT_ROOT, dir);
  files = packed.files;
  await installInto(app, PROJECT_ROOT, packed.tarball);
}, 240_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** A command in the app, as its user runs it; no terminal, NO_COLOR set. */
function inApp(file: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return run(file, args, {
    cwd: app,
    env: { ...process.env, NO_COLOR: '1', ...env },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
  });
}

describe.concurrent('the packed and installed package', () => {
  it('ships the built JavaScript, its declarations and the assets, and no TypeScript source', () => {
    expect(files).toContain('dist/bin/ccm-migrate.js');
    expect(files).toContain('dist/cdk/orchestrator.d.ts');
    expect(files).toContain('dist/lib/agent/agent.mjs');
    expect(files).toContain('assets/providers/aws/cloud-controller-manager.yaml');
    const outside = files.filter(
      (f) => !/^(dist|assets)\//.test(f) && !['package.json', 'README.md'].includes(f),
    );
    expect(outside).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('prints its version through npx, and exports the twin as ccm-migrate/twin', async () => {
    const { stdout } = await inApp('npx', ['ccm-migrate', '--version']);
    expect(stdout).toBe(`${VERSION}\n`);
    const twin = await inApp(process.execPath, [
      '--input-type=module',
      '-e',
      "const t = await import('ccm-migrate/twin'); console.log(typeof t.startTwin, typeof t.loadTwinSpec);",
    ]);
    expect(twin.stdout).toBe('function function\n');
  });

  it('migrates the demo twin through npx, from the installed assets and agent', async () => {
    // The small, fast AWS twin of the tests, its host files taken from the installed package.
    const fixture = await readFile(path.join(PROJECT_ROOT, 'test/fixtures/twins/aws-mini.yaml'), 'utf8');
    const installed = path.join(app, 'node_modules/ccm-migrate/assets/');
    await writeFile(path.join(app, 'twin.yaml'), fixture.replaceAll('../../../assets/', installed));
    const { stdout } = await inApp('npx', ['ccm-migrate', 'demo', '--spec', 'twin.yaml']);
    expect(stdout).toMatch(/^upgrade succeeded: cluster aws-mini/m);
    expect(stdout).toMatch(/Nodes deleted:\s+0$/m);
    expect(stdout).not.toContain('\u001b[');
  });

  it('synthesizes a three-line CDK app with MigrationOrchestrator from ccm-migrate/cdk', async () => {
    await writeFile(
      path.join(app, 'app.mjs'),
      [
        "import { App, Stack } from 'aws-cdk-lib'; import { MigrationOrchestrator } from 'ccm-migrate/cdk';",
        "const app = new App({ outdir: 'cdk.out' }); new MigrationOrchestrator(new Stack(app, 'Ccm'), 'Ccm');",
        'app.synth();',
      ].join('\n'),
    );
    // Bundling every function takes minutes on 2 busy cores: the next test bundles one as the stack would.
    await inApp(process.execPath, ['app.mjs'], { CDK_CONTEXT_JSON: '{"aws:cdk:bundling-stacks":[]}' });
    const template = JSON.parse(await readFile(path.join(app, 'cdk.out/Ccm.template.json'), 'utf8'));
    const handlers = Object.values(
      template.Resources as Record<string, { Type: string; Properties: { Handler?: string } }>,
    ).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.handler');
    expect(handlers).toHaveLength(FUNCTION_IDS.length);
  });

  it('bundles a function from the installed JavaScript as the stack does, with the agent and manifests', async () => {
    const out = path.join(app, 'bundle');
    const installed = path.join(app, 'node_modules/ccm-migrate/dist/cdk/');
    await writeFile(
      path.join(app, 'bundle.mjs'),
      [
        "import { build } from 'esbuild';",
        `import { ESBUILD_BUILD_OPTIONS, entryOf } from '${installed}bundling.js';`,
        `await build({ ...ESBUILD_BUILD_OPTIONS, entryPoints: [entryOf('stage-ccm')], outfile: '${out}/index.mjs' });`,
      ].join('\n'),
    );
    await inApp(process.execPath, ['bundle.mjs']);
    await inApp(process.execPath, [`${installed}function-files.js`, out]);
    expect((await readdir(out)).sort()).toEqual(['agent.mjs', 'assets', 'index.mjs', 'index.mjs.map']);
    expect(await readdir(path.join(out, 'assets/providers'))).toContain('aws');
    // The bundle is the installed JavaScript's: no TypeScript source was there to take.
    expect(await readFile(path.join(out, 'index.mjs.map'), 'utf8')).toContain('ccm-migrate/dist/lib/steps/');
  });
});
