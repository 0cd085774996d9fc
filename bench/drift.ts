/**
 * Drift benchmark: what a shallow drift check of a 5,000-node cluster costs the checker — API requests, CPU
 * time and memory (targets ≤ 20 requests, ≤ 1 s CPU, ≤ 200 MB RSS). The twin runs in its own process
 * (`ccm-migrate twin serve`) so that its serving work is not counted as the checker's.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { checkDrift } from '../lib/drift/check.ts';
import { clientsFromKubeconfigFile } from '../lib/kube/clients.ts';
import { localContext } from '../lib/local/context.ts';
import type { BenchRow } from './report.ts';
import { bigSpec } from './twin.ts';

const BIN = fileURLToPath(new URL('../bin/ccm-migrate.js', import.meta.url));

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
    const clients = clientsFromKubeconfigFile(kubeconfig);
    const rssBefore = process.memoryUsage().rss;
    const cpu = process.cpuUsage();
    const report = await checkDrift(localContext({ clients }), {
      clusterId: 'bench',
      provider: 'aws',
      expect: 'in-tree',
      deep: false,
    });
    const used = process.cpuUsage(cpu);
    if (report.status !== 'clean')
      throw new Error(`drift check of the bench twin: ${report.status} ${report.error ?? ''}`);
    return [
      {
        name: `shallow drift check, ${nodes} nodes: API requests`,
        value: report.apiRequests,
        unit: 'req',
        target: 20,
        better: 'lower',
      },
      {
        name: `shallow drift check, ${nodes} nodes: CPU`,
        value: (used.user + used.system) / 1e6,
        unit: 's',
        target: 1,
        better: 'lower',
      },
      {
        name: `shallow drift check, ${nodes} nodes: RSS`,
        value: process.memoryUsage().rss / 2 ** 20,
        unit: 'MB',
        target: 200,
        better: 'lower',
        note: `process RSS; ${(rssBefore / 2 ** 20).toFixed(0)} MB before the check`,
      },
    ];
  } finally {
    twin.kill('SIGTERM');
    await new Promise((resolve) => twin.once('exit', resolve));
    await rm(dir, { recursive: true, force: true });
  }
}
