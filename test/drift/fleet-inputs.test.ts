/** What the fleet drift run takes in and puts out: the fleet file, the registry's policy, the events. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driftEvents, type FleetCluster, remediationRequestId } from '../../lib/drift/events.ts';
import { loadFleetFile } from '../../lib/drift/fleet-file.ts';
import { type DriftSummary, summarizeReport } from '../../lib/drift/summary.ts';
import { DriftDetected, MigrationRequested } from '../../lib/events.ts';
import { LocalClusterRegistry } from '../../lib/store/registry.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-fleet-inputs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const cluster = (policy: Partial<FleetCluster['policy']> = {}): FleetCluster => ({
  clusterId: 'prod-eu-1',
  provider: 'aws',
  desiredMode: 'external',
  policy: { maxUnavailable: 3, ...policy },
});

const drifted = (n: number, severity: 'critical' | 'warning' | 'info' = 'critical'): DriftSummary =>
  summarizeReport({
    clusterId: 'prod-eu-1',
    expect: 'external',
    depth: 'shallow',
    status: 'drifted',
    checkedAt: '2026-11-23T00:00:00Z',
    apiRequests: 12,
    findings: Array.from({ length: n }, (_, i) => ({
      kind: 'node-stuck-uninitialized' as const,
      object: `Node worker-${i}`,
      expected: 'initialised by a cloud controller',
      seen: `tainted for 600 s ${'x'.repeat(400)}`,
      severity,
    })),
  });

describe('drift events', () => {
  it('are one DriftDetected with the first findings, lines cut to the event’s limit, the rest counted', () => {
    const [event, ...rest] = driftEvents(drifted(8), cluster(), 'drift-1');
    expect(rest).toEqual([]);
    const detail = DriftDetected.parse(event).detail;
    expect(detail.findings).toHaveLength(6);
    expect(detail.findings[0]).toMatch(/^critical node-stuck-uninitialized Node worker-0: expected /);
    expect(detail.findings[0]).toHaveLength(300);
    expect(detail.findings[5]).toBe('and 3 more finding(s)');
  });

  it('add a remediation request back to the desired mode where the policy says so, the same id every time', () => {
    const events = driftEvents(drifted(1), cluster({ autoRemediate: true }), 'drift-1');
    const request = MigrationRequested.parse(events[1]).detail;
    expect(request).toMatchObject({ clusterId: 'prod-eu-1', kind: 'upgrade', maxUnavailable: 3 });
    expect(request.requestId).toBe(remediationRequestId('drift-1', 'prod-eu-1'));
    expect(remediationRequestId('drift-2', 'prod-eu-1')).not.toBe(request.requestId);
    const back = driftEvents(
      drifted(1),
      { ...cluster({ autoRemediate: true }), desiredMode: 'in-tree' },
      'd',
    );
    expect(MigrationRequested.parse(back[1]).detail.kind).toBe('downgrade');
  });

  it('request no remediation for warnings and info only, even where the policy says so: they are reported', () => {
    for (const severity of ['warning', 'info'] as const) {
      const events = driftEvents(drifted(2, severity), cluster({ autoRemediate: true }), 'drift-1');
      expect(events.map((e) => e['detail-type'])).toEqual(['DriftDetected']);
    }
    // One critical finding among them is enough.
    const mixed = drifted(2, 'warning');
    const withCritical = { ...mixed, counts: { ...mixed.counts, critical: 1 } };
    expect(
      driftEvents(withCritical, cluster({ autoRemediate: true }), 'd').map((e) => e['detail-type']),
    ).toEqual(['DriftDetected', 'MigrationRequested']);
  });

  it('are none for a clean or unknown cluster', () => {
    const clean = { ...drifted(0), status: 'clean' as const };
    expect(driftEvents(clean, cluster({ autoRemediate: true }), 'd')).toEqual([]);
    expect(driftEvents({ ...clean, status: 'unknown' }, cluster({ autoRemediate: true }), 'd')).toEqual([]);
  });
});

describe('the registry’s autoRemediate policy', () => {
  it('is optional, and kept when given', async () => {
    const registry = new LocalClusterRegistry(dir);
    const record = {
      clusterId: 'prod-eu-1',
      provider: 'aws' as const,
      distribution: 'kubeadm' as const,
      kubeconfigSecretArn: 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:ccm/prod-eu-1',
      desiredMode: 'external' as const,
      policy: { maxUnavailable: 2, autoRollback: true },
    };
    await registry.put(record);
    expect((await registry.get('prod-eu-1'))?.policy.autoRemediate).toBeUndefined();
    await registry.put({ ...record, policy: { ...record.policy, autoRemediate: true } });
    expect((await registry.get('prod-eu-1'))?.policy).toEqual({
      maxUnavailable: 2,
      autoRollback: true,
      autoRemediate: true,
    });
    await expect(
      registry.put({ ...record, policy: { ...record.policy, autoRemediate: 'yes' as never } }),
    ).rejects.toThrow(/policy.autoRemediate/);
  });
});

describe('the fleet file', () => {
  const write = async (name: string, text: string) => {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  };

  it('gives each cluster its kubeconfig relative to the file, and the policy defaults', async () => {
    const file = await write(
      'fleet.json',
      JSON.stringify({
        clusters: [
          {
            clusterId: 'a',
            provider: 'aws',
            desiredMode: 'external',
            kubeconfig: 'kc/a',
            context: 'admin@a',
          },
          {
            clusterId: 'b',
            provider: 'gcp',
            desiredMode: 'in-tree',
            kubeconfig: '/abs/b',
            autoRemediate: true,
          },
        ],
      }),
    );
    expect(await loadFleetFile(file)).toEqual([
      {
        clusterId: 'a',
        provider: 'aws',
        desiredMode: 'external',
        policy: { maxUnavailable: 1, autoRemediate: false },
        kubeconfig: path.join(dir, 'kc/a'),
        context: 'admin@a',
      },
      {
        clusterId: 'b',
        provider: 'gcp',
        desiredMode: 'in-tree',
        policy: { maxUnavailable: 1, autoRemediate: true },
        kubeconfig: '/abs/b',
      },
    ]);
  });

  it('is refused, as bad input naming the file, when missing, malformed, duplicated or carrying unknown fields', async () => {
    const entry = 'clusterId: a\n    provider: aws\n    desiredMode: external\n    kubeconfig: k';
    const cases = {
      'dup.yaml': [`clusters:\n  - ${entry}\n  - ${entry}\n`, /lists a twice/],
      'extra.yaml': [`clusters:\n  - ${entry}\n    token: abc\n`, /Unrecognized key: "token"/],
      'mode.yaml': [`clusters:\n  - ${entry.replace('external', 'sideways')}\n`, /desiredMode/],
      'bad.yaml': ['clusters: [\n', /neither YAML nor JSON/],
    } as const;
    for (const [name, [text, why]] of Object.entries(cases)) {
      const file = await write(name, text);
      await expect(loadFleetFile(file)).rejects.toMatchObject({
        name: 'InvalidInput',
        message: expect.stringMatching(why),
      });
    }
    await expect(loadFleetFile(path.join(dir, 'none.yaml'))).rejects.toMatchObject({
      name: 'InvalidInput',
      message: expect.stringContaining('ENOENT'),
    });
  });
});
