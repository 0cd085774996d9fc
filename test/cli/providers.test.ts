/** `ccm-migrate providers`: the catalog as operators read it, from the catalog itself. */
import { describe, expect, it } from 'vitest';
import { providerRows, renderProviders } from '../../lib/cli/providers.ts';
import { ccmImageFor } from '../../lib/providers/catalog.ts';

describe('ccm-migrate providers', () => {
  it('lists the six providers with their in-tree names, removal versions and images per minor', () => {
    const rows = providerRows();
    expect(rows.map((r) => [r.provider, r.inTreeName, r.inTreeRemovedIn])).toEqual([
      ['aws', 'aws', '1.27'],
      ['azure', 'azure', '1.30'],
      ['gcp', 'gce', '1.31'],
      ['vsphere', 'vsphere', '1.30'],
      ['openstack', 'openstack', '1.26'],
      ['ibm', null, null],
    ]);
    expect(rows.find((r) => r.provider === 'aws')?.images['1.26']).toBe(ccmImageFor('aws', 'v1.26.15').image);
    expect(rows.find((r) => r.provider === 'azure')?.nodeManager).toBe('cloud-node-manager');
    const text = renderProviders(rows);
    expect(text).toContain('ibm (IBM Cloud); in-tree never (no downgrade target)');
    expect(text).toContain('gcp (Google Cloud); in-tree --cloud-provider=gce, removed in 1.31');
  });
});
