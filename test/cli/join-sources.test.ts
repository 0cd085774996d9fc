/**
 * The join-time sources the upgrade's summary lists: after an upgrade that succeeded only, and with the
 * field paths where the Cluster API providers' own templates keep the kubelet's flags (their in-tree
 * templates name the provider there, their external ones `external`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { JOIN_TIME_SOURCES } from '../../lib/cli/join-sources.ts';
import { summary } from '../../lib/cli/migration.ts';
import type { MigrationRunResult } from '../../lib/local/migration.ts';
import { REFERENCE_DIR, referenceRuns } from '../reference.ts';

const run = (status: MigrationRunResult['status']): MigrationRunResult => ({
  status,
  transitions: 12,
  clusterId: 'c1',
  runId: 'up-1',
  resumed: false,
  durationMs: 1000,
  apiRequests: 100,
  ...(status === 'SUCCEEDED' ? {} : { error: { name: 'RolledBack', cause: 'x' } }),
});

describe('the upgrade summary', () => {
  it('lists every join-time source with its fields and what to change, after an upgrade that succeeded', () => {
    const text = summary('upgrade', run('SUCCEEDED'));
    for (const s of JOIN_TIME_SOURCES) expect(text).toContain(`  - ${s.source}: ${s.fields.join(', ')}: `);
    expect(text).toContain(
      'KubeadmConfigTemplate (Cluster API workers): spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs: cloud-provider: external; no cloud-config; no DisableCloudProviders or DisableKubeletCloudCredentialProviders in feature-gates',
    );
    expect(text).toContain('ccm-migrate drift --deep --remediate --expect external');
  });

  it('says nothing of them after a downgrade or a failed upgrade', () => {
    expect(summary('downgrade', run('SUCCEEDED'))).not.toContain('KubeadmConfigTemplate');
    expect(summary('upgrade', run('FAILED'))).not.toContain('KubeadmConfigTemplate');
  });
});

const TEMPLATES = [
  ['capa-v2.1.4/cluster-template.yaml', 'aws'],
  ['capg-v1.10.0/cluster-template.yaml', 'gce'],
  ['capo-v0.6.0/cluster-template.yaml', 'openstack'],
  ['capz-v1.7.6/cluster-template.yaml', 'azure'],
  ['capa-v2.1.4/cluster-template-external-cloud-provider.yaml', 'external'],
  ['capo-v0.6.0/cluster-template-external-cloud-provider.yaml', 'external'],
  ['capz-v1.8.0/cluster-template.yaml', 'external'],
] as const;

function at(object: unknown, field: string): unknown {
  return field
    .split('.')
    .reduce<unknown>((o, key) => (o as Record<string, unknown> | undefined)?.[key], object);
}

describe.runIf(referenceRuns())('the Cluster API fields it names', () => {
  it.each(TEMPLATES)('hold the kubelet’s cloud-provider in %s (%s)', async (file, provider) => {
    const text = await readFile(path.join(REFERENCE_DIR, 'kubeadm/capi-templates', file), 'utf8');
    const objects = parseAllDocuments(text).map((d) => d.toJS() as { kind?: string });
    const named = JOIN_TIME_SOURCES.filter((s) => /^Kubeadm\w+ \(Cluster API/.test(s.source));
    expect(named).toHaveLength(2);
    for (const s of named) {
      const kind = s.source.split(' ')[0];
      const object = objects.find((o) => o.kind === kind);
      for (const field of s.fields) {
        expect(at(object, field), `${file} ${kind} ${field}`).toMatchObject({ 'cloud-provider': provider });
      }
    }
  });
});
