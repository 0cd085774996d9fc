/**
 * `npm run bench [-- --quick]`: every benchmark, one table, and the same figures in bench/results/latest.json.
 * Benchmarks print figures; they are not tests and do not fail the build. --quick (a few minutes) runs each
 * timed figure once and leaves out the 3 + 500-node, example-twin and leader-migration upgrades.
 */
import os from 'node:os';
import { benchBundles } from './bundles.ts';
import { benchDrift } from './drift.ts';
import { type BenchRow, renderTable, saveResults } from './report.ts';
import { benchTwin, withBigTwin } from './twin.ts';
import { benchUpgrade } from './upgrade.ts';

const quick = process.argv.includes('--quick');
const started = performance.now();
const rows: BenchRow[] = [
  ...(await withBigTwin(5000, async (big) => [
    ...(await benchTwin(big, { quick })),
    ...(await benchDrift(big)),
  ])),
  ...(await benchUpgrade({ quick })),
  ...(await benchBundles({ quick })),
];
const seconds = (performance.now() - started) / 1000;
process.stdout.write(
  `ccm-migrate benchmarks (${quick ? 'quick' : 'full'}, ${seconds.toFixed(0)} s) on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}\n\n`,
);
process.stdout.write(`${renderTable(rows)}\n`);
await saveResults(new URL('./results/latest.json', import.meta.url), rows, { quick, seconds });
// The twin's timers are stopped; exit explicitly in case a client keeps a socket alive.
process.exit(0);
