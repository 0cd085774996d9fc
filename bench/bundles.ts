/**
 * Each function bundled as the stack bundles it (cdk/bundling.ts), its size against its target (≤ 3 MB for
 * a function that talks to a cluster, ≤ 200 KB for the others), and the time Node takes to load it as a
 * ratio to the load of its libraries alone, bundled the same way (target ≤ 1.2×): what our own code adds to
 * a cold start. The AWS SDK (in the runtime) and Powertools (its layer) stay external as in Lambda, and load
 * here from the project's node_modules (the bundles are written under bench/results): the load counts them,
 * the size does not. All functions are built by one esbuild call: without code
 * splitting each entry point still gets a whole bundle of its own, as one NodejsFunction would.
 *
 * The libraries alone are what each kind of function imports, as our modules import them: the floor they
 * set under any function of that kind. A function and its floor are loaded in turn, run after run, so
 * that a busy machine weighs on both alike.
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
const KB_TARGET = { cluster: 3 * 1024, other: 200 };
const LOAD_TARGET = 1.2;

function timeNode(args: string[]): number {
  const start = process.hrtime.bigint();
  execFileSync(process.execPath, args, { stdio: 'ignore' });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const importing = (file: string) => ['--input-type=module', '-e', `await import(${JSON.stringify(file)})`];

const ZOD = "import * as z from 'zod'; export const s = z.object({ a: z.string() });";
const HANDLER = [
  "export { default as middy } from '@middy/core';",
  "export { Logger } from '@aws-lambda-powertools/logger';",
  "export { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';",
  "export { Metrics } from '@aws-lambda-powertools/metrics';",
  "export { Tracer } from '@aws-lambda-powertools/tracer';",
  "export { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';",
].join(' ');
const STORE_SDK = [
  "export { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
  "export { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
  "export { EventBridgeClient } from '@aws-sdk/client-eventbridge';",
].join(' ');
const CLUSTER = [
  "export { CoreV1Api, KubeConfig } from '@kubernetes/client-node';",
  "export { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';",
  "export { parseDocument } from 'yaml';",
].join(' ');

/** What each kind of function imports from its libraries. */
const FLOORS = {
  other: {
    name: 'libraries of a store function (zod, middy, Powertools, SDK clients)',
    source: `${ZOD} ${HANDLER} ${STORE_SDK}`,
  },
  cluster: {
    name: 'libraries of a cluster function (+ client-node, Secrets Manager, yaml)',
    source: `${ZOD} ${HANDLER} ${STORE_SDK} ${CLUSTER}`,
  },
} as const;
type Kind = keyof typeof FLOORS;

async function buildFloors(): Promise<Record<Kind, string>> {
  const dir = path.join(OUT, 'libraries');
  await mkdir(dir, { recursive: true });
  const files = {} as Record<Kind, string>;
  for (const [kind, { source }] of Object.entries(FLOORS) as [Kind, (typeof FLOORS)[Kind]][]) {
    const entry = path.join(dir, `${kind}.src.mjs`);
    files[kind] = path.join(dir, `${kind}.mjs`);
    await writeFile(entry, source);
    // Resolved from the project, as our modules resolve them.
    await build({
      ...ESBUILD_BUILD_OPTIONS,
      entryPoints: [entry],
      outfile: files[kind],
      nodePaths: [path.join(PROJECT_ROOT, 'node_modules')],
    });
  }
  return files;
}

export async function benchBundles(opts: { quick: boolean }): Promise<BenchRow[]> {
  // Three loads of each in --quick keep it near a minute; the full run takes the median of nine.
  const runs = opts.quick ? 3 : 9;
  await rm(OUT, { recursive: true, force: true });
  await build({
    ...ESBUILD_BUILD_OPTIONS,
    entryPoints: Object.fromEntries(FUNCTION_IDS.map((id) => [`${id}/index`, entryOf(id)])),
    outdir: OUT,
    outExtension: { '.js': '.mjs' },
  });
  const floors = await buildFloors();
  const rows: BenchRow[] = [];
  for (const [kind, { name }] of Object.entries(FLOORS) as [Kind, (typeof FLOORS)[Kind]][]) {
    rows.push({ name: `bundle ${name} alone`, value: (await stat(floors[kind])).size / 1024, unit: 'KB' });
  }
  for (const id of FUNCTION_IDS) {
    const kind: Kind = talksToCluster(id) ? 'cluster' : 'other';
    const outfile = path.join(OUT, id, 'index.mjs');
    const own: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < runs; i++) {
      floor.push(timeNode(importing(floors[kind])));
      own.push(timeNode(importing(outfile)));
    }
    rows.push(
      {
        name: `bundle ${id}`,
        value: (await stat(outfile)).size / 1024,
        unit: 'KB',
        target: KB_TARGET[kind],
        better: 'lower',
      },
      {
        name: `load ${id} / its libraries alone`,
        value: median(own) / median(floor),
        unit: '×',
        target: LOAD_TARGET,
        better: 'lower',
        note: `${median(own).toFixed(0)} ms vs ${median(floor).toFixed(0)} ms (median of ${runs})`,
      },
    );
  }
  return rows;
}
