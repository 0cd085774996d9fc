/**
 * What kube-controller-manager's flags say about node CIDRs and cloud routes (with upstream's defaults),
 * and what the CCM and kube-controller-manager run after the move.
 */
import { describe, expect, it } from 'vitest';
import { PreflightFailedError } from '../../lib/errors.ts';
import { providerFacts } from '../../lib/providers/catalog.ts';
import {
  ccmNodeNetworkFlags,
  controllerEnabled,
  kcmNodeNetwork,
  kcmNodeNetworkFlags,
} from '../../lib/providers/node-network.ts';

const AWS = providerFacts('aws');
const GCP = providerFacts('gcp');
const KUBENET = { 'cloud-provider': 'aws', 'allocate-node-cidrs': 'true', 'cluster-cidr': '10.244.0.0/16' };

describe('kcmNodeNetwork', () => {
  it('reads routes as on when --configure-cloud-routes is absent (its default is true)', () => {
    expect(kcmNodeNetwork(AWS, KUBENET)).toEqual({
      cloudRoutes: true,
      nodeIpam: 'range',
      clusterCidr: '10.244.0.0/16',
    });
  });

  it('reads no routes and no node IPAM when --allocate-node-cidrs is absent (its default is false)', () => {
    expect(kcmNodeNetwork(AWS, { 'cloud-provider': 'aws', 'cluster-cidr': '10.244.0.0/16' })).toEqual({
      cloudRoutes: false,
      nodeIpam: 'none',
    });
  });

  it('reads no routes when they are turned off, by flag or by --controllers, or the cloud has none', () => {
    const off = { cloudRoutes: false, nodeIpam: 'range' };
    expect(kcmNodeNetwork(AWS, { ...KUBENET, 'configure-cloud-routes': 'false' })).toEqual(off);
    expect(kcmNodeNetwork(AWS, { ...KUBENET, controllers: '*,-route' })).toEqual(off);
    expect(kcmNodeNetwork(AWS, { ...KUBENET, controllers: '*,-node-route-controller' })).toEqual(off);
    // In-tree vSphere's Routes() never answered; an external KCM has no cloud to program routes in.
    expect(kcmNodeNetwork(providerFacts('vsphere'), { ...KUBENET, 'cloud-provider': 'vsphere' })).toEqual(
      off,
    );
    expect(kcmNodeNetwork(AWS, { ...KUBENET, 'cloud-provider': 'external' })).toEqual(off);
  });

  it('tells GCE’s CloudAllocator apart from the range allocator, and a node-ipam turned off', () => {
    const gce = { ...KUBENET, 'cloud-provider': 'gce', 'configure-cloud-routes': 'false' };
    expect(kcmNodeNetwork(GCP, { ...gce, 'cidr-allocator-type': 'CloudAllocator' })).toEqual({
      cloudRoutes: false,
      nodeIpam: 'cloud',
      clusterCidr: '10.244.0.0/16',
    });
    expect(kcmNodeNetwork(GCP, { ...gce, controllers: '*,-nodeipam' }).nodeIpam).toBe('none');
  });

  it('refuses a CloudAllocator no CCM can take over, and routes or cloud IPAM without a cluster CIDR', () => {
    expect(() => kcmNodeNetwork(AWS, { ...KUBENET, 'cidr-allocator-type': 'CloudAllocator' })).toThrow(
      PreflightFailedError,
    );
    const { 'cluster-cidr': _, ...noCidr } = KUBENET;
    expect(() => kcmNodeNetwork(AWS, noCidr)).toThrow(/without --cluster-cidr/);
  });
});

describe('the flags each side runs with after the move', () => {
  it('gives the CCM routes and the cluster CIDR, and leaves KCM’s range allocator alone', () => {
    const network = kcmNodeNetwork(AWS, KUBENET);
    expect(ccmNodeNetworkFlags(AWS, network)).toEqual({
      'configure-cloud-routes': 'true',
      'cluster-cidr': '10.244.0.0/16',
    });
    expect(kcmNodeNetworkFlags(AWS, network)).toEqual({});
    expect(ccmNodeNetworkFlags(AWS, undefined)).toEqual({ 'configure-cloud-routes': 'false' });
  });

  it('moves CloudAllocator node IPAM to the GCP CCM and stops KCM allocating', () => {
    const network = { cloudRoutes: false, nodeIpam: 'cloud', clusterCidr: '10.0.0.0/14' } as const;
    expect(ccmNodeNetworkFlags(GCP, network)).toEqual({
      'configure-cloud-routes': 'false',
      controllers: '*',
      'allocate-node-cidrs': 'true',
      'cidr-allocator-type': 'CloudAllocator',
      'cluster-cidr': '10.0.0.0/14',
    });
    expect(kcmNodeNetworkFlags(GCP, network)).toEqual({ 'allocate-node-cidrs': 'false' });
  });

  it('reads --controllers as the controller managers do: an explicit name first, then *', () => {
    expect(controllerEnabled(undefined, ['route'])).toBe(true);
    expect(controllerEnabled('bootstrapsigner', ['route'])).toBe(false);
    expect(controllerEnabled('-route,*', ['node-route-controller', 'route'])).toBe(false);
    expect(controllerEnabled('*,route', ['route'])).toBe(true);
  });
});
