/**
 * Drift benchmark: what a shallow drift check of a 5,000-node cluster costs the checker — API requests, CPU
 * time and memory (targets ≤ 20 requests, ≤ 1 s CPU, ≤ 200 MB RSS). The twin (`ccm-migrate twin serve`)
 * and the checker (bench/drift-check.ts) each run in a process of their own, so that neither the twin's
 * serving nor the other benchmarks count as the checker's.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import type { BenchRow } from './report.ts';
import { bigSpec } from './twin.ts';

const BIN = fileURLToPath(new URL('../bin/ccm-migrate.js', import.meta.url));
const CHECK = fileURLToPath(new URL('./drift-check.ts', import.meta.url));
const run = promisify(execFile);

export async function benchDrift(): Promise<BenchRow[]> {
  const nodes = 5000;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-bench-drift-'));
  const specFile = path.join(dir, 'spec.yaml');
  await writeFile(specFile, stringify(await bigSpec(nodes)));
  const stateDir = path.join(dir, 'state');
  const twin = spawn(process.execPath, [BIN, 'twin', 'serve', '--spec', specFile, '--state-dir', stateDir], {
    stdio: 'ignore',
  });
  try {
    const kubeconfig = path.join(stateDir, 'kubeconfig');
    const deadline = Date.now() + 60_000;
    while (!existsSync(kubeconfig)) {
      if (Date.now() > deadline || twin.exitCode !== null)
        throw new Error('the 5,000-node twin did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { stdout } = await run(process.execPath, [CHECK, kubeconfig], { maxBuffer: 1 << 20 });
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
        note: `the checker's own process; ${m.rssBeforeMb.toFixed(0)} MB once its modules loaded`,
      },
    ];
  } finally {
    twin.kill('SIGTERM');
    await new Promise((resolve) => twin.once('exit', resolve));
    await rm(dir, { recursive: true, force: true });
  }
}
