/**
 * The twin of a scenario: its provider's small test twin (test/fixtures/twins, millisecond latencies and a
 * 1 s lease) grown or shrunk to the scenario's control-plane and worker counts, with its faults.
 */
import { fileURLToPath } from 'node:url';
import { loadTwinSpec, type Provider, parseTwinSpec, type TwinSpec } from '../../lib/twin/spec.ts';
import type { Scenario } from './scenario.ts';

const FIXTURE: Readonly<Record<Provider, string>> = {
  aws: 'aws-mini',
  azure: 'azure-mini',
  gce: 'gcp-mini',
  vsphere: 'vsphere-mini',
  openstack: 'openstack-mini',
  ibm: 'ibm-mini',
};

const fixtures = new Map<Provider, Promise<TwinSpec>>();

function fixture(provider: Provider): Promise<TwinSpec> {
  let spec = fixtures.get(provider);
  if (!spec) {
    spec = loadTwinSpec(
      fileURLToPath(new URL(`../../test/fixtures/twins/${FIXTURE[provider]}.yaml`, import.meta.url)),
    );
    fixtures.set(provider, spec);
  }
  return spec;
}

export async function scenarioSpec(s: Scenario): Promise<TwinSpec> {
  const spec = await fixture(s.provider);
  return parseTwinSpec(
    {
      ...spec,
      name: spec.name,
      nodeGroups: spec.nodeGroups.map((g) => ({
        ...g,
        count: g.role === 'control-plane' ? s.controlPlanes : s.workers,
      })),
      faults: s.faults,
    },
    `soak seed ${s.seed}`,
  );
}
