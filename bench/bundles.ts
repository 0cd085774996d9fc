/**
 * Each function bundled as the stack bundles it (cdk/bundling.ts), its size, and the time Node takes to
 * load it as a ratio to a bare `node -e 0` measured in the same run. The AWS SDK stays external
 * as in Lambda, resolved here from the project's node_modules (the bundles are written under bench/results).
 * All functions are built by one esbuild call: without code splitting each entry point still gets a whole
 * bundle of its own, as one NodejsFunction would, and the shared modules are parsed once.
 *
 * Then the same figures for a few of the chosen libraries alone, built the same way: the floor they set
 * under any function that uses them, so that a load ratio can be read as ours or theirs.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import {
  ESBUILD_BUILD_OPTIONS,
  entryOf,
  FUNCTION_IDS,
  PROJECT_ROOT,
  talksToCluster,
} from '../cdk/bundling.ts';
import { type BenchRow, median } from './report.ts';

const OUT = fileURLToPath(new URL('./results/bundles/', import.meta.url));

function timeNode(args: string[], runs: number): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    execFileSync(process.execPath, args, { stdio: 'ignore' });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

const ZOD = "import * as z from 'zod'; export const s = z.object({ a: z.string() });";
const STORE_SDK = [
  "export { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
  "export { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
  "export { EventBridgeClient } from '@aws-sdk/client-eventbridge';",
].join(' ');
const CLIENT_NODE = "export { CoreV1Api, KubeConfig } from '@kubernetes/client-node';";
const CLUSTER_EXTRAS = [
  "export { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';",
  "export { parseDocument } from 'yaml';",
  "export { Deployment } from 'kubernetes-models/apps/v1/Deployment';",
].join(' ');

/** Each library alone, imported as our modules import it, then all a function of each kind imports. */
const LIBRARIES: readonly { name: string; source: string; external?: true }[] = [
  { name: 'zod, one schema', source: ZOD },
  { name: 'AWS SDK, the run store and event clients', source: STORE_SDK, external: true },
  { name: '@kubernetes/client-node, KubeConfig and CoreV1Api', source: CLIENT_NODE },
  { name: 'store-function libraries (zod + those clients)', source: `${ZOD} ${STORE_SDK}` },
  {
    name: 'cluster-function libraries (+ client-node, Secrets Manager, yaml, models)',
    source: `${ZOD} ${STORE_SDK} ${CLIENT_NODE} ${CLUSTER_EXTRAS}`,
  },
];

async function libraryRows(bare: number, runs: number): Promise<BenchRow[]> {
  const dir = path.join(OUT, 'libraries');
  await mkdir(dir, { recursive: true });
  const rows: BenchRow[] = [];
  for (const [i, { name, source, external }] of LIBRARIES.entries()) {
    const entry = path.join(dir, `library-${i}.src.mjs`);
    const outfile = path.join(dir, `library-${i}.mjs`);
    await writeFile(entry, source);
    // Resolved from the project, as our modules resolve them.
    await build({
      ...ESBUILD_BUILD_OPTIONS,
      entryPoints: [entry],
      outfile,
      nodePaths: [path.join(PROJECT_ROOT, 'node_modules')],
    });
    const load = timeNode(['--input-type=module', '-e', `await import(${JSON.stringify(outfile)})`], runs);
    rows.push(
      ...(external
        ? [] // not in the bundle: loaded from the runtime's copy, as the functions load it
        : [{ name: `bundle ${name} alone`, value: (await stat(outfile)).size / 1024, unit: 'KB' }]),
      {
        name: `load ${name} alone / bare node`,
        value: load / bare,
        unit: '×',
        note: `${load.toFixed(0)} ms`,
      },
    );
  }
  return rows;
}

export async function benchBundles(opts: { quick: boolean }): Promise<BenchRow[]> {
  // One load per function in --quick keeps it under a minute; the full run takes the median of nine. The
  // bare start, the denominator of every ratio, is cheap enough to take the median of nine always.
  const runs = opts.quick ? 1 : 9;
  await rm(OUT, { recursive: true, force: true });
  await build({
    ...ESBUILD_BUILD_OPTIONS,
    entryPoints: Object.fromEntries(FUNCTION_IDS.map((id) => [`${id}/index`, entryOf(id)])),
    outdir: OUT,
    outExtension: { '.js': '.mjs' },
  });
  const bare = timeNode(['-e', '0'], 9);
  const rows: BenchRow[] = [];
  for (const id of FUNCTION_IDS) {
    const outfile = path.join(OUT, id, 'index.mjs');
    const kube = talksToCluster(id);
    const size = (await stat(outfile)).size / 1024;
    const load = timeNode(['--input-type=module', '-e', `await import(${JSON.stringify(outfile)})`], runs);
    rows.push(
      { name: `bundle ${id}`, value: size, unit: 'KB', target: kube ? 1536 : 200, better: 'lower' },
      {
        name: `load ${id} / bare node`,
        value: load / bare,
        unit: '×',
        target: kube ? 2 : 1.2,
        better: 'lower',
        note: `${load.toFixed(0)} ms (${runs === 1 ? '1 run' : `median of ${runs}`}) vs ${bare.toFixed(0)} ms`,
      },
    );
  }
  return [...rows, ...(await libraryRows(bare, runs))];
}
