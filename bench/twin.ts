/**
 * Twin benchmark: start-up time and memory of a 5,000-node twin, and the time to list all its nodes in
 * pages of 500 through the real Kubernetes client over HTTP. Targets from issue 2: start < 5 s,
 * RSS < 500 MB, full list < 1 s.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { loadTwinSpec, parseTwinSpec, type TwinSpec } from '../lib/twin/spec.ts';
import { startTwin } from '../lib/twin/twin.ts';
import { type BenchRow, median } from './report.ts';

const EXAMPLE = new URL('../assets/twins/aws-ha.yaml', import.meta.url);

/** The example AWS spec with its worker group grown to `nodes - 3` and no start-up latencies. */
export async function bigSpec(nodes: number): Promise<TwinSpec> {
  const example = await loadTwinSpec(fileURLToPath(EXAMPLE));
  const groups = example.nodeGroups.map((g) => (g.role === 'worker' ? { ...g, count: nodes - 3 } : g));
  return parseTwinSpec({
    ...example,
    name: 'bench',
    nodeGroups: groups,
    latencies: { ...example.latencies, staticPodRestart: 0, podStart: 0, kubeletRestart: 0, nodeInit: 0 },
  });
}

async function listAllNodes(kubeconfig: string, pageSize: number): Promise<{ ms: number; count: number }> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const api = kc.makeApiClient(CoreV1Api);
  const t0 = performance.now();
  let count = 0;
  let cont: string | undefined;
  do {
    const page = await api.listNode({ limit: pageSize, ...(cont ? { _continue: cont } : {}) });
    count += page.items.length;
    cont = page.metadata?._continue || undefined;
  } while (cont);
  return { ms: performance.now() - t0, count };
}

export async function benchTwin(opts: { quick: boolean }): Promise<BenchRow[]> {
  const nodes = 5000;
  const spec = await bigSpec(nodes);
  const stateDir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-bench-twin-'));
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const twin = await startTwin({ spec, stateDir });
  const startMs = performance.now() - t0;
  try {
    const runs = opts.quick ? 3 : 7;
    const lists: number[] = [];
    let listed = 0;
    for (let i = 0; i < runs; i++) {
      const r = await listAllNodes(twin.kubeconfigPath, 500);
      lists.push(r.ms);
      listed = r.count;
    }
    if (listed !== nodes) throw new Error(`listed ${listed} nodes, expected ${nodes}`);
    const rssMb = process.memoryUsage().rss / 2 ** 20;
    return [
      { name: `twin start-up, ${nodes} nodes`, value: startMs / 1000, unit: 's', target: 5, better: 'lower' },
      {
        name: `twin RSS, ${nodes} nodes`,
        value: rssMb,
        unit: 'MB',
        target: 500,
        better: 'lower',
        note: `process RSS; ${(rssBefore / 2 ** 20).toFixed(0)} MB before start`,
      },
      {
        name: `list ${nodes} nodes, pages of 500 (median of ${runs})`,
        value: median(lists) / 1000,
        unit: 's',
        target: 1,
        better: 'lower',
      },
    ];
  } finally {
    await twin.stop();
    await rm(stateDir, { recursive: true, force: true });
  }
}
