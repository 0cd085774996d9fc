/** providerIDs of Azure, GCP, vSphere, OpenStack and IBM, read as each CCM's instances code reads them. */
import { describe, expect, it } from 'vitest';
import { parseProviderID } from '../../lib/providers/provider-id.ts';

const SUB = '9c7f1f0e-1d2b-4c3a-8e5f-0a1b2c3d4e5f';
const UUID = '420f0d85-cf4a-c7a7-e52d-18e9b4b71dec';

describe('parseProviderID (the other five clouds)', () => {
  it('reads Azure VMs and VMSS instances, whatever the case of the resource path', () => {
    const vm = `azure:///subscriptions/${SUB}/resourceGroups/prod/providers/Microsoft.Compute/virtualMachines/cp-0`;
    expect(parseProviderID(vm)).toEqual({ provider: 'azure', instanceId: 'cp-0' });
    expect(parseProviderID(vm.replace('resourceGroups', 'resourcegroups'))).toMatchObject({
      instanceId: 'cp-0',
    });
    expect(
      parseProviderID(
        `azure:///subscriptions/${SUB}/resourceGroups/prod/providers/Microsoft.Compute/virtualMachineScaleSets/pool1/virtualMachines/3`,
      ),
    ).toEqual({ provider: 'azure', instanceId: 'pool1_3' });
  });

  it('reads gce://<project>/<zone>/<name>', () => {
    expect(parseProviderID('gce://my-project/europe-west1-b/node-1')).toEqual({
      provider: 'gcp',
      zone: 'europe-west1-b',
      instanceId: 'node-1',
    });
  });

  it('reads vsphere://<BIOS UUID> and openstack:///<uuid> (also the regional form)', () => {
    expect(parseProviderID(`vsphere://${UUID}`)).toEqual({ provider: 'vsphere', instanceId: UUID });
    expect(parseProviderID(`vsphere://${UUID.toUpperCase()}`)).toEqual({
      provider: 'vsphere',
      instanceId: UUID,
    });
    expect(parseProviderID(`openstack:///${UUID}`)).toEqual({ provider: 'openstack', instanceId: UUID });
    expect(parseProviderID(`openstack://RegionOne/${UUID}`)).toEqual({
      provider: 'openstack',
      instanceId: UUID,
    });
  });

  it('reads ibm://<account>///<cluster>/<worker>', () => {
    expect(parseProviderID('ibm://acct123///c9a1/kube-c9a1-worker-1')).toEqual({
      provider: 'ibm',
      instanceId: 'kube-c9a1-worker-1',
    });
  });

  it('refuses malformed ids of each cloud', () => {
    for (const id of [
      `azure:///subscriptions/${SUB}/resourceGroups/prod/providers/Microsoft.Network/loadBalancers/lb`,
      `azure://subscriptions/${SUB}/resourceGroups/prod/providers/Microsoft.Compute/virtualMachines/cp-0`,
      'gce://my-project/node-1',
      'gce://my-project/europe-west1-b/node-1/extra',
      'vsphere://not-a-uuid',
      `vsphere:///${UUID}`,
      'openstack:///server-1',
      `openstack:///${UUID}/x`,
      'ibm://acct/c9a1/worker',
    ]) {
      expect(parseProviderID(id), id).toBeUndefined();
    }
  });
});
