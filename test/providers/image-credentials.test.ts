/**
 * The rules of image credentials across the flip (lib/providers/image-credentials.ts), case by case from
 * the kubelet's sources: matchImages as credentialprovider.URLsMatch reads it, the in-tree providers' lives
 * by minor, gate and flag, and the config each minor's kubelet reads.
 */
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  credentialPluginOf,
  credentialProviderConfig,
  imageRegistry,
  inTreeCredentials,
  matchesImage,
} from '../../lib/providers/image-credentials.ts';

describe('matchesImage', () => {
  it.each([
    ['*.dkr.ecr.*.amazonaws.com', '123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/api:1', true],
    ['*.dkr.ecr.*.amazonaws.com', '123456789012.dkr.ecr.eu-west-1.amazonaws.com.cn/shop/api:1', false],
    ['*.dkr.ecr.*.amazonaws.com', 'public.ecr.aws/docker/library/node:22', false],
    ['*.azurecr.io', 'shop.azurecr.io/api:1', true],
    // One label per `*`: a geo-replica's extra label is another glob's.
    ['*.azurecr.io', 'shop.westeurope.azurecr.io/api:1', false],
    ['gcr.io', 'gcr.io/project/api:1', true],
    ['*.gcr.io', 'gcr.io/project/api:1', false],
    ['*.pkg.dev', 'us-docker.pkg.dev/project/repo/api:1', true],
    ['registry.example.com:5000', 'registry.example.com/api:1', false],
    ['registry.example.com/team', 'registry.example.com/team/api:1', true],
    ['registry.example.com/team', 'registry.example.com/other/api:1', false],
    ['*.azurecr.io', 'nginx:1.27', false],
  ])('%s against %s: %s', (glob, image, want) => {
    expect(matchesImage(glob, image)).toBe(want);
  });

  it('reads the registry as Docker does: a first part with a dot or a port, or localhost', () => {
    expect(imageRegistry('nginx')).toBe('docker.io');
    expect(imageRegistry('library/nginx:1')).toBe('docker.io');
    expect(imageRegistry('localhost/api')).toBe('localhost');
    expect(imageRegistry('registry:5000/api')).toBe('registry:5000');
  });
});

describe('inTreeCredentials', () => {
  const flags = (entries: Record<string, string> = {}) => new Map(Object.entries(entries));
  const off = { 'feature-gates': 'DisableKubeletCloudCredentialProviders=false' };
  it.each([
    // The gate is off by default until 1.28: ECR works on any EC2 instance while the code is there.
    ['aws', 26, {}, true],
    ['aws', 27, off, false],
    ['gcp', 28, {}, true],
    // On by default from 1.29: only a kubelet that sets it off keeps them.
    ['gcp', 29, {}, false],
    ['gcp', 30, off, true],
    ['gcp', 31, off, false],
    // Azure's needs --azure-container-registry-config besides.
    ['azure', 29, off, false],
    ['azure', 29, { ...off, 'azure-container-registry-config': '/etc/kubernetes/azure.json' }, true],
    ['azure', 30, { ...off, 'azure-container-registry-config': '/etc/kubernetes/azure.json' }, false],
    ['vsphere', 29, off, false],
  ] as const)('%s on 1.%i with %o: %s', (provider, minor, given, want) => {
    expect(inTreeCredentials(provider, minor, flags(given))).toBe(want);
  });
});

describe('credentialProviderConfig', () => {
  it('names the plugin with the upstream registries, in the API version of the minor, with the file it reads', () => {
    const azure = credentialPluginOf('azure');
    if (!azure) throw new Error('Azure has a plugin');
    const doc = parseYaml(credentialProviderConfig(azure, 29, '/etc/kubernetes/azure.json'));
    expect(doc).toEqual({
      apiVersion: 'kubelet.config.k8s.io/v1',
      kind: 'CredentialProviderConfig',
      providers: [
        {
          name: 'acr-credential-provider',
          apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
          matchImages: ['*.azurecr.io', '*.azurecr.cn', '*.azurecr.de', '*.azurecr.us'],
          defaultCacheDuration: '10m',
          args: ['/etc/kubernetes/azure.json'],
        },
      ],
    });
    const gcp = credentialPluginOf('gcp');
    if (!gcp) throw new Error('GCP has a plugin');
    const v1beta1 = parseYaml(credentialProviderConfig(gcp, 25));
    expect(v1beta1.apiVersion).toBe('kubelet.config.k8s.io/v1beta1');
    expect(v1beta1.providers[0].args).toEqual(['get-credentials', '--v=3']);
    expect(credentialPluginOf('openstack')).toBeUndefined();
  });
});
