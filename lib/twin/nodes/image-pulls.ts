/**
 * The twin's kubelet pulling images from its cloud's private registry (ECR, ACR, GCR/Artifact Registry),
 * read from its own flags and host files, as the real kubelet decides it (kubernetes v1.25–v1.30
 * pkg/credentialprovider and its plugin package):
 * - the in-tree credential provider is compiled in until the provider's code goes (AWS 1.27, Azure 1.30,
 *   GCE 1.31) and works unless DisableKubeletCloudCredentialProviders is on (default on from 1.29); Azure's
 *   needs --azure-container-registry-config besides;
 * - else a credential plugin: --image-credential-provider-config names plugins by binary name, with the
 *   registries each answers for (matchImages); the cloud's own plugin gets the node's credentials (the
 *   Azure one reads the azure.json its argument names);
 * - a kubelet given plugin flags whose directory or binaries are missing, or whose config does not read,
 *   exits at start ("Failed to register CRI auth plugins").
 * An image the node has no credentials for fails to pull (ErrImagePull), as a private registry answers 401.
 */
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Provider } from '../spec.ts';
import { compiledIn } from './binary-start.ts';
import { gateValue } from './command-line.ts';

/** The registries of each cloud that only its nodes' identities may pull from, and the cloud's plugin. */
const REGISTRIES: Partial<Record<Provider, { host: RegExp; plugin: string; inTree: string }>> = {
  aws: {
    host: /^\d{12}\.dkr\.ecr(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/,
    plugin: 'ecr-credential-provider',
    inTree: 'aws',
  },
  azure: { host: /^[a-z0-9]+\.azurecr\.(io|cn|de|us)$/, plugin: 'acr-credential-provider', inTree: 'azure' },
  gce: {
    host: /^([a-z0-9-]+\.)?gcr\.io$|^[a-z0-9-]+-docker\.pkg\.dev$|^container\.cloud\.google\.com$/,
    plugin: 'auth-provider-gcp',
    inTree: 'gce',
  },
};

/** What a pull needs to know of the host. */
export interface HostView {
  read(file: string): string | undefined;
  exists(file: string): boolean;
}

interface PluginEntry {
  name?: unknown;
  matchImages?: unknown;
  defaultCacheDuration?: unknown;
  apiVersion?: unknown;
  args?: unknown;
}

const API_VERSIONS = ['v1alpha1', 'v1beta1', 'v1'].map((v) => `credentialprovider.kubelet.k8s.io/${v}`);

function registryOf(image: string): string {
  const first = image.split('/')[0] ?? '';
  return image.includes('/') && /[.:]|^localhost$/.test(first) ? first : 'docker.io';
}

/** The config's providers, or the error the kubelet reports for it. */
function readPluginConfig(file: string, host: HostView): PluginEntry[] | string {
  const text = host.read(file);
  if (text === undefined) return `unable to read credential provider config file ${file}`;
  let doc: { kind?: unknown; providers?: unknown };
  try {
    doc = (parseYaml(text) ?? {}) as typeof doc;
  } catch (err) {
    return `error decoding config ${file}: ${String((err as Error).message).split('\n')[0]}`;
  }
  if (doc.kind !== 'CredentialProviderConfig')
    return `error decoding config ${file}: not a CredentialProviderConfig`;
  const providers = Array.isArray(doc.providers) ? (doc.providers as PluginEntry[]) : [];
  if (providers.length === 0)
    return 'failed to validate credential provider config: providers: Required value';
  const bad = providers.find(
    (p) =>
      typeof p.name !== 'string' ||
      !Array.isArray(p.matchImages) ||
      p.matchImages.length === 0 ||
      p.defaultCacheDuration === undefined ||
      !API_VERSIONS.includes(String(p.apiVersion)),
  );
  return bad ? `failed to validate credential provider config: provider ${String(bad.name)}` : providers;
}

/** Why a kubelet with these flags exits at start over its credential plugins; undefined when it starts. */
export function pluginStartProblem(flags: ReadonlyMap<string, string>, host: HostView): string | undefined {
  const config = flags.get('image-credential-provider-config') ?? '';
  const dir = flags.get('image-credential-provider-bin-dir') ?? '';
  if (config === '' && dir === '') return undefined;
  const fail = (why: string) => `Failed to register CRI auth plugins: ${why}`;
  if (!host.exists(dir)) return fail(`plugin binary directory ${dir} did not exist`);
  const providers = readPluginConfig(config, host);
  if (typeof providers === 'string') return fail(providers);
  const missing = providers.find((p) => !host.exists(path.posix.join(dir, String(p.name))));
  return missing
    ? fail(`plugin binary executable ${path.posix.join(dir, String(missing.name))} did not exist`)
    : undefined;
}

/** One host label against a glob label, as Go's filepath.Match reads `*` and `?` (a label has no separator). */
function labelMatches(glob: string, label: string): boolean {
  if (glob === '') return label === '';
  if (glob[0] === '*') {
    return Array.from({ length: label.length + 1 }, (_, i) => i).some((i) =>
      labelMatches(glob.slice(1), label.slice(i)),
    );
  }
  return (
    label !== '' && (glob[0] === '?' || glob[0] === label[0]) && labelMatches(glob.slice(1), label.slice(1))
  );
}

function globMatches(glob: string, registry: string): boolean {
  const g = glob.split('/')[0]?.split('.') ?? [];
  const r = registry.split('.');
  return g.length === r.length && g.every((label, i) => labelMatches(label, r[i] as string));
}

export interface PullingKubelet {
  readonly provider: Provider;
  readonly minor: number;
  /** Its flags as it started (config file gates merged). */
  readonly flags: ReadonlyMap<string, string>;
  readonly host: HostView;
}

/** Why the kubelet cannot pull `image`; undefined when it can (a public image, or credentials it has). */
export function pullRefusal(image: string, kubelet: PullingKubelet): string | undefined {
  const cloud = REGISTRIES[kubelet.provider];
  const registry = registryOf(image);
  if (!cloud?.host.test(registry)) return undefined;
  const { flags, minor, host } = kubelet;
  const gateOn = gateValue(flags, 'DisableKubeletCloudCredentialProviders') ?? minor >= 29;
  const acrFlag = kubelet.provider !== 'azure' || (flags.get('azure-container-registry-config') ?? '') !== '';
  if (compiledIn(cloud.inTree, minor) && !gateOn && acrFlag) return undefined;
  const config = flags.get('image-credential-provider-config');
  const providers = config ? readPluginConfig(config, host) : [];
  const plugin =
    typeof providers === 'string'
      ? undefined
      : providers.find(
          (p) =>
            p.name === cloud.plugin &&
            (p.matchImages as string[]).some((g) => typeof g === 'string' && globMatches(g, registry)),
        );
  const args = Array.isArray(plugin?.args) ? (plugin.args as unknown[]) : [];
  const azureConfig = args.find((a) => typeof a === 'string' && a.startsWith('/'));
  const pluginWorks =
    plugin && (kubelet.provider !== 'azure' || (typeof azureConfig === 'string' && host.exists(azureConfig)));
  if (pluginWorks) return undefined;
  return `failed to pull and unpack image "${image}": failed to resolve reference "${image}": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`;
}
