/**
 * The reliability campaign's quick slice (issue 16): eight seeds of `npm run soak -- --quick`, each a fresh
 * twin migrated under its random faults (outages, crash-loops, failing lookups, request bursts, a killed
 * and resumed CLI, a racing second request, a downgrade), and nothing may be found: no invariant violated,
 * no node file lost, nothing left behind, every exit code true. The full campaign is `npm run soak`.
 */
import { expect, it } from 'vitest';
import { runCampaign } from '../../bench/soak/campaign.ts';

const SEEDS = 8;

it('finds nothing in a quick slice of the campaign', { timeout: 300_000 }, async () => {
  const report = await runCampaign({ runs: SEEDS, seed: 1, concurrency: 2, quick: true });

  const findings = report.failures.map((f) => ({
    replay: f.replay,
    violations: f.violations,
    filesLost: f.filesLost,
    objectsLeft: f.objectsLeft,
    unexpectedExitCodes: f.unexpectedExitCodes,
  }));
  expect(findings).toEqual([]);
  const { migrated, rolledBack, failed } = report.outcomes;
  expect(migrated + rolledBack + failed).toBe(SEEDS);
  expect(migrated).toBeGreaterThan(0);
});
