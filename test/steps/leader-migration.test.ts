/** When the upgrade hands the cloud controllers over under the migration lease, and why. */
import { describe, expect, it } from 'vitest';
import { PreflightFailedError } from '../../lib/errors.ts';
import { decideLeaderMigration } from '../../lib/steps/leader-migration.ts';

describe('decideLeaderMigration', () => {
  it('is on by default for an HA control plane on 1.24+, off for a single one', () => {
    expect(decideLeaderMigration('v1.26.15', 3, undefined).enabled).toBe(true);
    expect(decideLeaderMigration('v1.26.15', 1, undefined)).toMatchObject({
      enabled: false,
      reason: expect.stringMatching(/one control-plane node/),
    });
  });

  it('is off before 1.24 unless asked for, and refused when asked for there', () => {
    expect(decideLeaderMigration('v1.23.17', 3, undefined)).toMatchObject({
      enabled: false,
      reason: expect.stringMatching(/predates leader migration GA/),
    });
    expect(() => decideLeaderMigration('v1.23.17', 3, true)).toThrow(PreflightFailedError);
  });

  it('follows the operator: off when turned off, on when asked for even with one node', () => {
    expect(decideLeaderMigration('v1.29.0', 3, false).enabled).toBe(false);
    expect(decideLeaderMigration('v1.29.0', 1, true).enabled).toBe(true);
  });

  it('is off when node IPAM moves to the CCM, which the migration lease does not hand over, and refused when asked for', () => {
    expect(decideLeaderMigration('v1.30.14', 3, undefined, true)).toMatchObject({
      enabled: false,
      reason: expect.stringMatching(/node IPAM moves to the CCM/),
    });
    expect(() => decideLeaderMigration('v1.30.14', 3, true, true)).toThrow(PreflightFailedError);
    expect(decideLeaderMigration('v1.30.14', 3, false, true).enabled).toBe(false);
  });
});
