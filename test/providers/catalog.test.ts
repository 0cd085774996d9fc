import { describe, expect, it } from 'vitest';
import { InvalidInputError, PreflightFailedError, UnsupportedProviderError } from '../../lib/errors.ts';
import {
  ccmImageFor,
  inTreeRemovedIn,
  inTreeTarget,
  PROVIDERS,
  providerFacts,
  providerForInTreeName,
} from '../../lib/providers/catalog.ts';

const AWS_REPO = 'registry.k8s.io/provider-aws/cloud-controller-manager';

describe('the provider catalog', () => {
  it('names six providers and knows the CCM of each', () => {
    expect(PROVIDERS).toEqual(['aws', 'azure', 'gcp', 'vsphere', 'openstack', 'ibm']);
    for (const p of PROVIDERS) {
      const facts = providerFacts(p);
      expect(facts.containerName).toBe('cloud-controller-manager');
      expect(facts.leaseName).toBe('cloud-controller-manager');
      expect(facts.csiDrivers.length).toBeGreaterThan(0);
    }
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

  it('refuses an unknown provider, naming the ones it knows', () => {
    expect(() => providerFacts('digitalocean')).toThrow(UnsupportedProviderError);
    expect(() => providerFacts('digitalocean')).toThrow(
      /unknown provider "digitalocean": ccm-migrate knows aws, azure, gcp, vsphere, openstack, ibm/,
    );
  });

  it('has the facts of each provider: in-tree name, removal, CCM name, config, CSI', () => {
    const row = (p: (typeof PROVIDERS)[number]) => {
      const f = providerFacts(p);
      return [
        f.inTreeName,
        inTreeRemovedIn(p),
        f.ccmCloudProvider,
        f.cloudConfigRequired ?? false,
        f.csiDrivers,
      ];
    };
    expect(row('azure')).toEqual(['azure', 30, 'azure', true, ['disk.csi.azure.com', 'file.csi.azure.com']]);
    expect(row('gcp')).toEqual(['gce', 31, 'gce', false, ['pd.csi.storage.gke.io']]);
    expect(row('vsphere')).toEqual(['vsphere', 30, 'vsphere', true, ['csi.vsphere.vmware.com']]);
    expect(row('openstack')).toEqual([
      'openstack',
      26,
      'openstack',
      true,
      ['cinder.csi.openstack.org', 'manila.csi.openstack.org'],
    ]);
    expect(row('ibm')).toEqual([undefined, undefined, 'ibm', true, ['vpc.block.csi.ibm.io']]);
    expect(providerFacts('azure').nodeManager?.daemonSetName).toBe('cloud-node-manager');
    expect(providerFacts('gcp').nodeIpam?.kcmFlags).toEqual({ 'allocate-node-cidrs': 'false' });
  });

  it('gives the in-tree target of a downgrade, and none for IBM, which never was in-tree', () => {
    expect(inTreeTarget('gcp')).toBe('gce');
    expect(inTreeTarget('openstack')).toBe('openstack');
    expect(() => inTreeTarget('ibm')).toThrow(PreflightFailedError);
    expect(() => inTreeTarget('ibm')).toThrow(/IBM Cloud \(ibm\) never had an in-tree cloud provider/);
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
    expect(() => ccmImageFor('digitalocean', 'v1.29.3')).toThrow(UnsupportedProviderError);
  });

  it('knows an image for the minor each in-tree provider was last usable on, from its own repository', () => {
    expect(ccmImageFor('azure', 'v1.29.4').image).toBe(
      'mcr.microsoft.com/oss/kubernetes/azure-cloud-controller-manager:v1.29.15',
    );
    expect(ccmImageFor('azure', 'v1.32.1').image).toBe(
      'mcr.microsoft.com/oss/v2/kubernetes/azure-cloud-controller-manager:v1.32.17',
    );
    expect(ccmImageFor('gcp', 'v1.30.4').image).toBe(
      'registry.k8s.io/cloud-provider-gcp/cloud-controller-manager:v30.0.0',
    );
    expect(ccmImageFor('vsphere', 'v1.29.4').image).toBe(
      'registry.k8s.io/cloud-pv-vsphere/cloud-provider-vsphere:v1.29.0',
    );
    expect(ccmImageFor('vsphere', 'v1.27.4').image).toBe(
      'gcr.io/cloud-provider-vsphere/cpi/release/manager:v1.27.0',
    );
    expect(ccmImageFor('openstack', 'v1.25.16')).toEqual({
      image: 'registry.k8s.io/provider-os/openstack-cloud-controller-manager:v1.25.6',
      minor: 25,
    });
    expect(ccmImageFor('ibm', 'v1.31.2').image).toBe(
      'registry.ng.bluemix.net/armada-master/ibm-cloud-controller-manager:v1.31.1-1',
    );
  });

  it('borrows one minor back where a provider published nothing (GCP 1.31), and no further', () => {
    expect(ccmImageFor('gcp', 'v1.31.0')).toMatchObject({ minor: 30 });
    // IBM: nothing for 1.33 nor 1.32 (an alpha only).
    expect(() => ccmImageFor('ibm', 'v1.33.0')).toThrow(
      /no IBM Cloud cloud-controller-manager for Kubernetes v1\.33\.0/,
    );
    expect(() => ccmImageFor('openstack', 'v1.24.9')).toThrow(UnsupportedProviderError);
  });

  it('tags every image with its own minor (GCP: the tag major is the minor)', () => {
    for (const p of PROVIDERS) {
      for (const [minor, image] of Object.entries(providerFacts(p).ccmImages)) {
        const tag =
          p === 'gcp'
            ? new RegExp(`:v${minor}\\.\\d+\\.\\d+$`)
            : new RegExp(`:v1\\.${minor}\\.\\d+(-\\d+)?$`);
        expect(image, `${p} 1.${minor}`).toMatch(tag);
      }
    }
  });
});
