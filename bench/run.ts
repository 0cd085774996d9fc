/**
 * `npm run bench [-- --quick]`: every benchmark, one table, and the same figures in bench/results/latest.json.
 * Benchmarks print figures; they are not tests and do not fail the build.
 */
import os from 'node:os';
import { benchBundles } from './bundles.ts';
import { benchDrift } from './drift.ts';
import { type BenchRow, renderTable, saveResults } from './report.ts';
import { benchTwin } from './twin.ts';
import { benchUpgrade } from './upgrade.ts';

const quick = process.argv.includes('--quick');
const rows: BenchRow[] = [
  ...(await benchTwin({ quick })),
  ...(await benchUpgrade({ quick })),
  ...(await benchDrift()),
  ...(await benchBundles({ quick })),
];
process.stdout.write(
  `ccm-migrate benchmarks (${quick ? 'quick' : 'full'}) on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}\n\n`,
);
process.stdout.write(`${renderTable(rows)}\n`);
await saveResults(new URL('./results/latest.json', import.meta.url), rows);
// The twin's timers are stopped; exit explicitly in case a client keeps a socket alive.
process.exit(0);
