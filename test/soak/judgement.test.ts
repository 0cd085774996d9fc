/**
 * The soak's judgement of the invariant monitor's intervals (bench/soak/run-scenario.ts ofTheRuns): what
 * an injected fault did is not the runs' doing, and everything else is. Seed 1126 (GCE, one control-plane
 * node, an API outage at 1.6-3.3 s, a 1 s lease): the CCM could not renew its lease in the outage and
 * stopped leading, as a real one does, and a tainted node had no controller for 1.1 s after the API was
 * back, until the next took the lease; the campaign counted that as a violation of the run's making.
 */
import { describe, expect, it } from 'vitest';
import { ofTheRuns } from '../../bench/soak/run-scenario.ts';
import { drawScenario } from '../../bench/soak/scenario.ts';
import type { Violation } from '../../lib/twin/invariants.ts';

const T0 = Date.parse('2026-11-26T00:00:00.000Z');
const at = { t0: T0, runsFrom: T0 + 500, leaseMs: 1000 };

function interval(kind: Violation['kind'], fromMs: number, toMs: number): Violation {
  return {
    kind,
    start: new Date(T0 + fromMs).toISOString(),
    end: new Date(T0 + toMs).toISOString(),
    durationMs: toMs - fromMs,
    detail: {},
  };
}

describe('the soak’s judgement', () => {
  // Seed 1126's own scenario: its outage is 1587-3273 ms.
  const s = drawScenario(1126, { quick: false });
  const outage = s.faults.find((f) => f.kind === 'apiOutage');

  it('draws seed 1126 as it ran: an API outage from 1.6 s to 3.3 s on one control-plane node', () => {
    expect(s.controlPlanes).toBe(1);
    expect(outage).toMatchObject({ after: 1587, duration: 1686 });
  });

  it('does not count a tainted node without a controller that an outage caused, within a lease after it', () => {
    expect(ofTheRuns(s, at, interval('uninitialized-without-cloud-controller', 3200, 4300))).toBe(false);
  });

  it('counts one that began before the outage, or outlasted it by more than a lease', () => {
    expect(ofTheRuns(s, at, interval('uninitialized-without-cloud-controller', 1000, 2000))).toBe(true);
    expect(ofTheRuns(s, at, interval('uninitialized-without-cloud-controller', 3200, 9000))).toBe(true);
    expect(ofTheRuns(s, at, interval('uninitialized-without-cloud-controller', 8000, 8500))).toBe(true);
  });

  it('counts two cloud controllers whenever they ran, outage or not', () => {
    expect(ofTheRuns(s, at, interval('two-cloud-controllers', 2000, 2100))).toBe(true);
  });

  it('counts nothing that began before the runs did', () => {
    expect(ofTheRuns(s, at, interval('two-cloud-controllers', 100, 2100))).toBe(false);
  });
});
