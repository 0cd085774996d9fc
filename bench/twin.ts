/**
 * Twin benchmark: start-up time and memory of a 5,000-node twin, and the time to list all its nodes in
 * pages of 500 through the real Kubernetes client over HTTP. Targets from issue 2: start < 5 s,
 * RSS < 500 MB, full list < 1 s. The same twin then serves the drift benchmark (bench/drift.ts), whose
 * checker runs in a process of its own.
 */
import { rm } from 'node:fs/promises';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type RunningTwin, startTwin } from '../lib/twin/twin.ts';
import { type BenchRow, median } from './report.ts';
import { bigSpec, SCRATCH_BASE, scratchDir } from './specs.ts';

export interface BigTwin {
  readonly twin: RunningTwin;
  readonly nodes: number;
  readonly startMs: number;
  /** This process's RSS before the twin started. */
  readonly rssBeforeMb: number;
}

/** A twin of `nodes` nodes for the duration of `use`, its state dir removed afterwards. */
export async function withBigTwin<T>(nodes: number, use: (big: BigTwin) => Promise<T>): Promise<T> {
  const spec = await bigSpec(nodes);
  const stateDir = await scratchDir('twin');
  const rssBeforeMb = process.memoryUsage().rss / 2 ** 20;
  const t0 = performance.now();
  const twin = await startTwin({ spec, stateDir });
  const startMs = performance.now() - t0;
  try {
    return await use({ twin, nodes, startMs, rssBeforeMb });
  } finally {
    await twin.stop();
    await rm(stateDir, { recursive: true, force: true });
  }
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

export async function benchTwin(big: BigTwin, opts: { quick: boolean }): Promise<BenchRow[]> {
  const { nodes } = big;
  const runs = opts.quick ? 3 : 7;
  const lists: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await listAllNodes(big.twin.kubeconfigPath, 500);
    if (r.count !== nodes) throw new Error(`listed ${r.count} nodes, expected ${nodes}`);
    lists.push(r.ms);
  }
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  return [
    {
      name: `twin start-up, ${nodes} nodes`,
      value: big.startMs / 1000,
      unit: 's',
      target: 5,
      better: 'lower',
      note: `node files in ${SCRATCH_BASE}`,
    },
    {
      name: `twin RSS, ${nodes} nodes`,
      value: rssMb,
      unit: 'MB',
      target: 500,
      better: 'lower',
      note: `process RSS; ${big.rssBeforeMb.toFixed(0)} MB before start`,
    },
    {
      name: `list ${nodes} nodes, pages of 500 (median of ${runs})`,
      value: median(lists) / 1000,
      unit: 's',
      target: 1,
      better: 'lower',
    },
  ];
}
