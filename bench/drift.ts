/**
 * Drift benchmark: what a shallow drift check of a 5,000-node cluster costs the checker — API requests, CPU
 * time and memory (targets ≤ 20 requests, ≤ 1 s CPU, ≤ 200 MB RSS). The checker (bench/drift-check.ts) runs
 * in a process of its own, bundled as the check-drift function is, against the twin of bench/twin.ts, so
 * that neither the twin's serving nor the other benchmarks count as the checker's.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { ESBUILD_BUILD_OPTIONS } from '../cdk/bundling.ts';
import type { BenchRow } from './report.ts';
import type { BigTwin } from './twin.ts';

const CHECK = fileURLToPath(new URL('./drift-check.ts', import.meta.url));
const BUNDLED = fileURLToPath(new URL('./results/drift-check.mjs', import.meta.url));
const run = promisify(execFile);

/**
 * The checker bundled as the stack bundles check-drift (cdk/bundling.ts): Lambda runs JavaScript, and
 * Node's TypeScript loader alone would add ≈ 80 MB to the process's RSS.
 */
async function bundledChecker(): Promise<string> {
  await build({
    ...ESBUILD_BUILD_OPTIONS,
    entryPoints: [CHECK],
    outfile: BUNDLED,
  });
  return BUNDLED;
}

export async function benchDrift(big: BigTwin): Promise<BenchRow[]> {
  const { nodes } = big;
  const checker = await bundledChecker();
  const { stdout } = await run(process.execPath, [checker, big.twin.kubeconfigPath], { maxBuffer: 1 << 20 });
  const m = JSON.parse(stdout) as {
    status: string;
    error?: string;
    apiRequests: number;
    cpuSeconds: number;
    rssMb: number;
    rssBeforeMb: number;
  };
  if (m.status !== 'clean') throw new Error(`drift check of the bench twin: ${m.status} ${m.error ?? ''}`);
  return [
    {
      name: `shallow drift check, ${nodes} nodes: API requests`,
      value: m.apiRequests,
      unit: 'req',
      target: 20,
      better: 'lower',
    },
    {
      name: `shallow drift check, ${nodes} nodes: CPU`,
      value: m.cpuSeconds,
      unit: 's',
      target: 1,
      better: 'lower',
    },
    {
      name: `shallow drift check, ${nodes} nodes: RSS`,
      value: m.rssMb,
      unit: 'MB',
      target: 200,
      better: 'lower',
      note: `the checker's own process, bundled as deployed; ${m.rssBeforeMb.toFixed(0)} MB once its modules loaded`,
    },
  ];
}
