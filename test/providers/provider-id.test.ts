import { describe, expect, it } from 'vitest';
import { PreflightFailedError } from '../../lib/errors.ts';
import { detectProvider, parseProviderID, providerOfProviderID } from '../../lib/providers/provider-id.ts';

describe('parseProviderID (AWS, as cloud-provider-aws reads it)', () => {
  it('reads aws:///<zone>/<instance>, the form the in-tree kubelet and the CCM write', () => {
    expect(parseProviderID('aws:///us-east-1a/i-0abc123def4567890')).toEqual({
      provider: 'aws',
      zone: 'us-east-1a',
      instanceId: 'i-0abc123def4567890',
    });
    expect(parseProviderID('aws:///us-west-2-lax-1a/i-12345678')).toMatchObject({ zone: 'us-west-2-lax-1a' });
  });

  it('reads the zone-less and the legacy zone-as-host spellings, and Fargate pseudo-instances', () => {
    expect(parseProviderID('aws:////i-0abc123def4567890')).toEqual({
      provider: 'aws',
      instanceId: 'i-0abc123def4567890',
    });
    expect(parseProviderID('aws://us-east-1a/i-0abc123def4567890')).toEqual({
      provider: 'aws',
      zone: 'us-east-1a',
      instanceId: 'i-0abc123def4567890',
    });
    expect(parseProviderID('aws:///eu-west-1b/fargate-ip-192-168-10-4.eu-west-1.compute.internal')).toEqual({
      provider: 'aws',
      zone: 'eu-west-1b',
      instanceId: 'fargate-ip-192-168-10-4.eu-west-1.compute.internal',
    });
  });

  it('refuses what is not an AWS instance, and what no provider writes', () => {
    for (const id of [
      '',
      'i-0abc',
      'aws://i-0abc',
      'aws:///us-east-1a/',
      'aws:///us-east-1a/vol-0abc',
      'aws:///a/b/i-0abc',
      'aws://us-east-1a/b/i-0abc',
      'aws:///US-EAST-1A/i-0abc',
      'kind://docker/kind/kind-control-plane',
    ]) {
      expect(parseProviderID(id), id).toBeUndefined();
    }
  });

  it('tells every provider by its scheme, supported or not', () => {
    expect(providerOfProviderID('aws:///us-east-1a/i-1')).toBe('aws');
    expect(providerOfProviderID('gce://my-project/europe-west1-b/node-1')).toBe('gcp');
    expect(providerOfProviderID('vsphere://420f0d85-cf4a-c7a7-e52d-18e9b4b71dec')).toBe('vsphere');
    expect(providerOfProviderID('azure:///subscriptions/x/resourceGroups/y')).toBe('azure');
    expect(providerOfProviderID('ibm://acct///cluster/worker')).toBe('ibm');
    expect(providerOfProviderID('kind://docker/kind/n')).toBeUndefined();
    expect(providerOfProviderID('awsx:///z/i-1')).toBeUndefined();
  });
});

describe('detectProvider', () => {
  it('names the provider that providerIDs and in-tree flags agree on, with the evidence', () => {
    const detected = detectProvider({
      providerIDs: ['aws:///us-east-1a/i-01', 'aws:///us-east-1b/i-02', 'aws:///us-east-1c/i-03'],
      cloudProviderFlags: ['aws', 'aws', 'external', '', 'aws'],
    });
    expect(detected).toEqual({
      provider: 'aws',
      evidence: ['3 node providerIDs like aws:///us-east-1a/i-01', '--cloud-provider=aws on 3 components'],
    });
  });

  it('detects from flags alone, and from providerIDs alone', () => {
    expect(detectProvider({ providerIDs: [], cloudProviderFlags: ['gce'] })).toEqual({
      provider: 'gcp',
      evidence: ['--cloud-provider=gce on 1 component'],
    });
    expect(detectProvider({ providerIDs: ['aws:////i-1'], cloudProviderFlags: ['external'] })?.provider).toBe(
      'aws',
    );
  });

  it('is undefined when nothing names a provider', () => {
    expect(detectProvider({ providerIDs: [], cloudProviderFlags: [] })).toBeUndefined();
    expect(
      detectProvider({ providerIDs: ['kind://docker/kind/n1'], cloudProviderFlags: ['external', ''] }),
    ).toBeUndefined();
  });

  it('refuses a cluster that shows two providers, naming both', () => {
    const mixedIDs = () =>
      detectProvider({
        providerIDs: ['aws:///us-east-1a/i-01', 'gce://p/europe-west1-b/n2'],
        cloudProviderFlags: [],
      });
    expect(mixedIDs).toThrow(PreflightFailedError);
    expect(mixedIDs).toThrow(
      /more than one provider: aws \(1 node providerID like aws:\/\/\/us-east-1a\/i-01\) and gcp/,
    );
    expect(() =>
      detectProvider({ providerIDs: ['aws:///us-east-1a/i-01'], cloudProviderFlags: ['azure'] }),
    ).toThrow(/aws .* and azure \(--cloud-provider=azure on 1 component\)/);
  });
});
