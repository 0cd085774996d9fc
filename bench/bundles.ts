/**
 * Each function bundled as the stack bundles it (cdk/bundling.ts), its size, and the time Node takes to
 * load it as a ratio to a bare `node -e 0` measured in the same run. The AWS SDK stays external
 * as in Lambda, resolved here from the project's node_modules (the bundles are written under bench/results).
 * All functions are built by one esbuild call: without code splitting each entry point still gets a whole
 * bundle of its own, as one NodejsFunction would, and the shared modules are parsed once.
 */
import { execFileSync } from 'node:child_process';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { ESBUILD_BUILD_OPTIONS, entryOf, FUNCTION_IDS, talksToCluster } from '../cdk/bundling.ts';
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
  return rows;
}
