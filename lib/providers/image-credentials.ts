/**
 * Image pulls with the node's cloud identity, before and after the flip. The kubelet's in-tree credential
 * providers (ECR, ACR, GCR/Artifact Registry) are compiled into it, independently of --cloud-provider, until
 * their code is removed (AWS 1.27, Azure 1.30, GCE 1.31), and are off when the DisableKubeletCloudCredential
 * Providers gate is on: off by default from 1.29 (beta), so the flip that takes `=false` out turns them off.
 * The external way is a credential provider plugin: a binary in `--image-credential-provider-bin-dir` named
 * by a CredentialProviderConfig file (`--image-credential-provider-config`). The kubelet exits at start when
 * the config names a plugin that is not in that directory (pkg/credentialprovider/plugin/plugin.go,
 * RegisterCredentialProviderPlugins), so the flip configures only a plugin it has found on the node.
 *
 * Sources (kubernetes/kubernetes v1.25–v1.30 pkg/credentialprovider): aws_credentials.go (registered on any
 * EC2 instance unless the gate is on), azure_credentials.go (only with --azure-container-registry-config;
 * the flag is gone from 1.30), gcp/metadata.go (on a GCE VM unless the gate is on). The plugins' configs are
 * the upstream ones: cloud-provider-aws docs/credential_provider.md, cloud-provider-azure's
 * acr-credential-provider docs, cloud-provider-gcp's auth-provider-gcp as kube-up configures it.
 */
import { parseFeatureGates } from '../controlplane/flags.ts';
import type { ProviderId } from './catalog.ts';

export const CREDENTIAL_GATE = 'DisableKubeletCloudCredentialProviders';
/** The kubelet's flags that configure credential plugins. */
export const PLUGIN_CONFIG_FLAG = 'image-credential-provider-config';
export const PLUGIN_BIN_DIR_FLAG = 'image-credential-provider-bin-dir';
/** The in-tree ACR provider's flag: the file it reads (azure.json); deprecated in 1.29, gone in 1.30. */
export const ACR_CONFIG_FLAG = 'azure-container-registry-config';
/** The CredentialProviderConfig the flip writes (backed up as absent: the way back removes it). */
export const PLUGIN_CONFIG_PATH = '/etc/kubernetes/image-credential-provider-config.yaml';

/**
 * Where the plugin binaries are installed by the images and tools that ship them, in the order the agent
 * looks: the kubelet has no default directory, so the flip names the first one that holds the plugin.
 */
export const PLUGIN_DIRS = [
  '/usr/local/bin',
  // Amazon EKS AMIs and Bottlerocket-style hosts.
  '/etc/eks/image-credential-provider',
  // cloud-provider-azure's install docs; AKS nodes.
  '/var/lib/kubelet/credential-provider',
  // kube-up on GCE (AUTH_PROVIDER_GCP_LINUX_BIN_DIR).
  '/home/kubernetes/bin',
  '/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec',
] as const;

export interface CredentialPlugin {
  /** The plugin's binary, and its provider name in the config. */
  readonly name: string;
  /** The registries it answers for (kubelet matchImages globs). */
  readonly matchImages: readonly string[];
  readonly defaultCacheDuration: string;
  /** Its fixed arguments. */
  readonly args?: readonly string[];
  /** Its argument is the file the in-tree provider read through this kubelet flag (Azure: azure.json). */
  readonly argFromFlag?: string;
  /** The last minor whose kubelet has the in-tree provider compiled in. */
  readonly inTreeUntil: number;
  /** What the in-tree provider needs besides the gate being off: a flag set (Azure); else only the cloud. */
  readonly inTreeNeedsFlag?: string;
  /** The registry, in words. */
  readonly registry: string;
}

const PLUGINS: Partial<Record<ProviderId, CredentialPlugin>> = {
  aws: {
    name: 'ecr-credential-provider',
    matchImages: [
      '*.dkr.ecr.*.amazonaws.com',
      '*.dkr.ecr.*.amazonaws.com.cn',
      '*.dkr.ecr-fips.*.amazonaws.com',
      '*.dkr.ecr.us-iso-east-1.c2s.ic.gov',
      '*.dkr.ecr.us-isob-east-1.sc2s.sgov.gov',
    ],
    defaultCacheDuration: '12h',
    inTreeUntil: 26,
    registry: 'ECR',
  },
  azure: {
    name: 'acr-credential-provider',
    matchImages: ['*.azurecr.io', '*.azurecr.cn', '*.azurecr.de', '*.azurecr.us'],
    defaultCacheDuration: '10m',
    argFromFlag: ACR_CONFIG_FLAG,
    inTreeUntil: 29,
    inTreeNeedsFlag: ACR_CONFIG_FLAG,
    registry: 'ACR',
  },
  gcp: {
    name: 'auth-provider-gcp',
    matchImages: ['container.cloud.google.com', 'gcr.io', '*.gcr.io', '*.pkg.dev'],
    defaultCacheDuration: '1m',
    args: ['get-credentials', '--v=3'],
    inTreeUntil: 30,
    registry: 'GCR/Artifact Registry',
  },
};

/** The credential plugin that replaces the provider's in-tree one; undefined where there was none. */
export function credentialPluginOf(provider: ProviderId): CredentialPlugin | undefined {
  return PLUGINS[provider];
}

/** Every plugin's name: the agent reports where each is installed. */
export const PLUGIN_NAMES: readonly string[] = Object.values(PLUGINS).map((p) => p.name);

/** DisableKubeletCloudCredentialProviders as these flags leave it: as given, else its default for the minor. */
function gateOn(flags: ReadonlyMap<string, string>, minor: number): boolean {
  return parseFeatureGates(flags.get('feature-gates') ?? '').get(CREDENTIAL_GATE) ?? minor >= 29;
}

/** Whether a kubelet of this minor with these flags pulls with the provider's in-tree credentials. */
export function inTreeCredentials(
  provider: ProviderId,
  minor: number,
  flags: ReadonlyMap<string, string>,
): boolean {
  const plugin = PLUGINS[provider];
  if (!plugin || minor > plugin.inTreeUntil || gateOn(flags, minor)) return false;
  return plugin.inTreeNeedsFlag === undefined || (flags.get(plugin.inTreeNeedsFlag) ?? '') !== '';
}

/** The registry host of an image reference (Docker's rule: a first part with a dot or port, or localhost). */
export function imageRegistry(image: string): string {
  const first = image.split('/')[0] ?? '';
  return image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')
    ? first
    : 'docker.io';
}

/** One host label against one glob label (Go's filepath.Match: `*` any run, `?` one character). */
function labelMatches(glob: string, label: string): boolean {
  const pattern = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${pattern}$`).test(label);
}

/**
 * Whether a matchImages glob matches an image, as the kubelet matches them (credentialprovider.URLsMatch):
 * the same number of host labels, each matching its glob, the same port, the glob's path a prefix.
 */
export function matchesImage(glob: string, image: string): boolean {
  const [globHost = '', ...globPath] = glob.split('/');
  const host = imageRegistry(image);
  const path = image.slice(host.length + 1);
  const [gHost, gPort] = globHost.split(':');
  const [iHost, iPort] = host.split(':');
  if (gPort !== iPort) return false;
  const g = (gHost ?? '').split('.');
  const i = (iHost ?? '').split('.');
  if (g.length !== i.length || !g.every((label, k) => labelMatches(label, i[k] ?? ''))) return false;
  return path.startsWith(globPath.join('/'));
}

/** The images (of those given) that the plugin answers for. */
export function imagesOf(plugin: CredentialPlugin, images: Iterable<string>): string[] {
  return [...new Set(images)]
    .filter((image) => plugin.matchImages.some((g) => matchesImage(g, image)))
    .sort();
}

/**
 * The CredentialProviderConfig naming the plugin, in the API version of the kubelet's minor (v1 from 1.26,
 * v1beta1 in 1.24 and 1.25). `argFile` is the file a plugin with argFromFlag reads.
 */
export function credentialProviderConfig(plugin: CredentialPlugin, minor: number, argFile?: string): string {
  const version = minor >= 26 ? 'v1' : 'v1beta1';
  const args = [...(plugin.args ?? []), ...(argFile ? [argFile] : [])];
  return [
    `apiVersion: kubelet.config.k8s.io/${version}`,
    'kind: CredentialProviderConfig',
    '# Written by ccm-migrate: the kubelet pulls from the cloud registry with this plugin instead of its',
    '# in-tree credential provider. The way back (downgrade, rollback) removes this file.',
    'providers:',
    `  - name: ${plugin.name}`,
    `    apiVersion: credentialprovider.kubelet.k8s.io/${version}`,
    '    matchImages:',
    ...plugin.matchImages.map((g) => `      - "${g}"`),
    `    defaultCacheDuration: "${plugin.defaultCacheDuration}"`,
    ...(args.length > 0 ? ['    args:', ...args.map((a) => `      - ${JSON.stringify(a)}`)] : []),
    '',
  ].join('\n');
}
