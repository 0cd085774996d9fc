import { describe, expect, it } from 'vitest';
import { InvalidInputError, UnsupportedProviderError } from '../../lib/errors.ts';
import {
  ccmImageFor,
  PROVIDERS,
  providerFacts,
  providerForInTreeName,
  supportedProviders,
} from '../../lib/providers/catalog.ts';

const AWS_REPO = 'registry.k8s.io/provider-aws/cloud-controller-manager';

describe('the provider catalog', () => {
  it('names six providers and supports AWS so far', () => {
    expect(PROVIDERS).toEqual(['aws', 'azure', 'gcp', 'vsphere', 'openstack', 'ibm']);
    expect(supportedProviders()).toEqual(['aws']);
  });

  it('knows where the AWS CCM runs and what it is called', () => {
    expect(providerFacts('aws')).toMatchObject({
      id: 'aws',
      inTreeName: 'aws',
      ccmCloudProvider: 'aws',
      namespace: 'kube-system',
      deploymentName: 'aws-cloud-controller-manager',
      containerName: 'cloud-controller-manager',
      leaseName: 'cloud-controller-manager',
      csiDrivers: ['ebs.csi.aws.com'],
    });
  });

  it('refuses the providers it has no facts for, saying which it supports', () => {
    for (const id of ['azure', 'gcp', 'vsphere', 'openstack', 'ibm']) {
      const err = (() => {
        try {
          return providerFacts(id);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(UnsupportedProviderError);
      expect((err as Error).message).toMatch(new RegExp(`^ccm-migrate supports aws so far; .*\\(${id}\\)`));
    }
    expect(() => providerFacts('digitalocean')).toThrow(
      /unknown provider "digitalocean": ccm-migrate knows aws, azure/,
    );
  });

  it('maps in-tree --cloud-provider values to providers (gce is gcp; external and ibm are none)', () => {
    expect(providerForInTreeName('aws')).toBe('aws');
    expect(providerForInTreeName('gce')).toBe('gcp');
    expect(providerForInTreeName('openstack')).toBe('openstack');
    for (const value of ['external', '', 'ibm', 'gcp', 'AWS'])
      expect(providerForInTreeName(value)).toBeUndefined();
  });
});

describe('ccmImageFor', () => {
  it('picks the image of the cluster’s minor', () => {
    expect(ccmImageFor('aws', 'v1.26.15')).toEqual({ image: `${AWS_REPO}:v1.26.14`, minor: 26 });
    expect(ccmImageFor('aws', '1.28.0')).toEqual({ image: `${AWS_REPO}:v1.28.11`, minor: 28 });
    expect(ccmImageFor('aws', 'v1.35.0+k3s1')).toEqual({ image: `${AWS_REPO}:v1.35.2`, minor: 35 });
  });

  it('borrows the previous minor’s image when a minor has none yet, never a newer one', () => {
    // 1.36 has git tags but no promoted image in the snapshot the catalog cites.
    expect(ccmImageFor('aws', 'v1.36.1')).toEqual({ image: `${AWS_REPO}:v1.35.2`, minor: 35 });
    expect(() => ccmImageFor('aws', 'v1.37.0')).toThrow(UnsupportedProviderError);
    expect(() => ccmImageFor('aws', 'v1.37.0')).toThrow(/Kubernetes v1\.37\.0: .*1\.25 to 1\.35/);
    // Older than any image: a newer CCM would be outside the skew policy.
    expect(() => ccmImageFor('aws', 'v1.24.17')).toThrow(UnsupportedProviderError);
  });

  it('has one image per minor, each built for that minor', () => {
    const { ccmImages } = providerFacts('aws');
    const minors = Object.keys(ccmImages).map(Number);
    expect(minors).toEqual(Array.from({ length: 11 }, (_, i) => 25 + i));
    for (const m of minors) expect(ccmImages[m]).toMatch(new RegExp(`^${AWS_REPO}:v1\\.${m}\\.\\d+$`));
  });

  it('refuses what is not a version, and providers without facts', () => {
    expect(() => ccmImageFor('aws', 'latest')).toThrow(InvalidInputError);
    expect(() => ccmImageFor('aws', 'v2.0.0')).toThrow(InvalidInputError);
    expect(() => ccmImageFor('azure', 'v1.29.3')).toThrow(UnsupportedProviderError);
  });
});
