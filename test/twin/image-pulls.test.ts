/**
 * The twin kubelet's image pulls from its cloud's private registry (lib/twin/nodes/image-pulls.ts), read
 * from its own flags and host files: in-tree credentials, a credential plugin, and the start-up failures
 * of a plugin config whose binaries are not there.
 */
import { describe, expect, it } from 'vitest';
import { pluginStartProblem, pullRefusal } from '../../lib/twin/nodes/image-pulls.ts';

const CONFIG = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: acr-credential-provider
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    matchImages: ["*.azurecr.io"]
    defaultCacheDuration: 10m
    args: [/etc/kubernetes/azure.json]
`;

function host(files: Record<string, string>) {
  const dirs = new Set(
    Object.keys(files).flatMap((f) =>
      f
        .split('/')
        .slice(1, -1)
        .map((_, i, parts) => `/${parts.slice(0, i + 1).join('/')}`),
    ),
  );
  return { read: (f: string) => files[f], exists: (f: string) => f in files || dirs.has(f) };
}
const flags = (entries: Record<string, string>) => new Map(Object.entries(entries));
const PLUGIN_FLAGS = {
  'image-credential-provider-config': '/etc/creds.yaml',
  'image-credential-provider-bin-dir': '/usr/local/bin',
};

describe('pluginStartProblem', () => {
  it('starts without plugin flags, and with a config whose every plugin is in the directory', () => {
    expect(pluginStartProblem(flags({}), host({}))).toBeUndefined();
    const ok = host({ '/etc/creds.yaml': CONFIG, '/usr/local/bin/acr-credential-provider': '' });
    expect(pluginStartProblem(flags(PLUGIN_FLAGS), ok)).toBeUndefined();
  });

  it('exits as the kubelet does on a missing directory, binary or config', () => {
    expect(pluginStartProblem(flags(PLUGIN_FLAGS), host({ '/etc/creds.yaml': CONFIG }))).toBe(
      'Failed to register CRI auth plugins: plugin binary directory /usr/local/bin did not exist',
    );
    expect(
      pluginStartProblem(
        flags(PLUGIN_FLAGS),
        host({ '/etc/creds.yaml': CONFIG, '/usr/local/bin/other': '' }),
      ),
    ).toBe(
      'Failed to register CRI auth plugins: plugin binary executable /usr/local/bin/acr-credential-provider did not exist',
    );
    expect(pluginStartProblem(flags(PLUGIN_FLAGS), host({ '/usr/local/bin/x': '' }))).toMatch(
      /unable to read credential provider config file/,
    );
  });
});

describe('pullRefusal', () => {
  const azure = (given: Record<string, string>, files: Record<string, string> = {}) => ({
    provider: 'azure' as const,
    minor: 29,
    flags: flags(given),
    host: host(files),
  });
  const IMAGE = 'shop.azurecr.io/api:1';

  it('pulls public images whatever the credentials', () => {
    expect(pullRefusal('registry.k8s.io/pause:3.9', azure({}))).toBeUndefined();
    expect(
      pullRefusal('mcr.microsoft.com/oss/kubernetes/azure-cloud-node-manager:v1.29.15', azure({})),
    ).toBeUndefined();
  });

  it('pulls from ACR with the in-tree provider only with the gate off and its flag set', () => {
    const off = { 'feature-gates': 'DisableKubeletCloudCredentialProviders=false' };
    expect(
      pullRefusal(IMAGE, azure({ ...off, 'azure-container-registry-config': '/etc/kubernetes/azure.json' })),
    ).toBeUndefined();
    expect(pullRefusal(IMAGE, azure(off))).toMatch(/no basic auth credentials/);
    expect(
      pullRefusal(IMAGE, azure({ 'azure-container-registry-config': '/etc/kubernetes/azure.json' })),
    ).toMatch(/no basic auth credentials/);
  });

  it('pulls from ACR with acr-credential-provider when the azure.json it names is there', () => {
    const files = { '/etc/creds.yaml': CONFIG, '/usr/local/bin/acr-credential-provider': '' };
    expect(
      pullRefusal(IMAGE, azure(PLUGIN_FLAGS, { ...files, '/etc/kubernetes/azure.json': '{}' })),
    ).toBeUndefined();
    expect(pullRefusal(IMAGE, azure(PLUGIN_FLAGS, files))).toMatch(/no basic auth credentials/);
    // Its matchImages do not cover another registry of the same cloud.
    expect(
      pullRefusal(
        'shop.azurecr.cn/api:1',
        azure(PLUGIN_FLAGS, { ...files, '/etc/kubernetes/azure.json': '{}' }),
      ),
    ).toMatch(/no basic auth credentials/);
  });
});
