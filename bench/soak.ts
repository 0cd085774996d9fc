/**
 * `npm run soak -- --runs N --seed S [--concurrency C] [--quick] [--out F]`: the reliability campaign. N seeded
 * scenarios, each a fresh twin migrated under random faults (bench/soak/), checked for what a migration
 * must never do; the totals and every finding (with the command that replays its seed) go to
 * bench/results/soak.json. Exits 1 when anything was found. A benchmark, not a test: the quick slice in
 * `npm test` is test/soak/quick-slice.test.ts.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { runCampaign } from './soak/campaign.ts';
import { hasFinding, type SoakReport } from './soak/report.ts';

const ArgsSchema = z.object({
  runs: z.coerce.number().int().min(1).max(100_000),
  seed: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 31),
  concurrency: z.coerce.number().int().min(1).max(16),
  out: z.string().min(1),
  quick: z.boolean(),
});

function args(): z.infer<typeof ArgsSchema> {
  try {
    const { values } = parseArgs({
      options: {
        runs: { type: 'string', default: '20' },
        seed: { type: 'string', default: '1' },
        concurrency: { type: 'string', default: '1' },
        quick: { type: 'boolean', default: false },
        out: { type: 'string', default: new URL('./results/soak.json', import.meta.url).pathname },
      },
    });
    const parsed = ArgsSchema.safeParse(values);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`);
    throw new Error(problems.join('; '));
  } catch (err) {
    process.stderr.write(
      `soak: ${(err as Error).message}\nusage: npm run soak -- --runs N --seed S [--concurrency C] [--quick] [--out F]\n`,
    );
    process.exit(2);
  }
}

const opts = args();
await mkdir(path.dirname(opts.out), { recursive: true });
const save = (report: SoakReport): Promise<void> =>
  writeFile(opts.out, `${JSON.stringify(report, null, 2)}\n`);
let saving = Promise.resolve();
const report = await runCampaign({
  ...opts,
  onResult: (r, soFar) => {
    process.stdout.write(
      `seed ${r.seed}: ${r.outcome} in ${(r.ms / 1000).toFixed(1)} s${hasFinding(r) ? ' — FINDING' : ''}\n`,
    );
    // The report so far, in case the campaign is cut short.
    saving = saving.then(() => save(soFar));
  },
});
await saving;
await save(report);
const { failures, ...totals } = report;
process.stdout.write(`\n${JSON.stringify(totals, null, 2)}\n`);
for (const f of failures) process.stdout.write(`replay seed ${f.seed}: ${f.replay}\n`);
// The twins' timers are stopped; exit explicitly in case a client keeps a socket alive.
process.exit(failures.length > 0 ? 1 : 0);
