/**
 * Whether the twin's kube-apiserver, kube-controller-manager and kubelet start with their cloud flags, and
 * the error each exits with when not. The twin's own model of the binaries, in the order they fail:
 *
 * 1. flag parsing: kube-apiserver has no --cloud-provider/--cloud-config from 1.33, the kubelet no
 *    --cloud-config from 1.34 nor --azure-container-registry-config from 1.30, nor --config-dir before 1.28
 *    (pflag: "unknown flag: --x"; the kubelet wraps it);
 * 2. feature gates: DisableCloudProviders and DisableKubeletCloudCredentialProviders are locked to true in
 *    1.31 and 1.32 and gone from 1.33 (component-base/featuregate);
 * 3. the provider:
 *    - kube-apiserver checks it only from 1.29 (pkg/kubeapiserver/options/cloudprovider.go; absent in the
 *      v1.25.16–v1.28.15 sources, and v1.26.15's binary starts with any name): `external` needs both
 *      gates on, a provider still compiled in needs both off, any other name is unknown; it reports every
 *      error at once;
 *    - kube-controller-manager and the kubelet initialise it: a name not compiled in is unknown, one that
 *      is needs DisableCloudProviders off (on by default from 1.29);
 * 4. the kubelet's --node-ip: a dual-stack pair only where its provider allows one (cloud/node-ip.ts).
 * test/twin/binary-start-real.test.ts holds this model to the real kube-apiserver binaries.
 */

import { kubeletNodeIPs } from '../cloud/node-ip.ts';
import { gateValue } from './command-line.ts';

export type Binary = 'kube-apiserver' | 'kube-controller-manager' | 'kubelet';

/** The last minor whose binaries still contain each in-tree provider. */
const LAST_MINOR_WITH: Readonly<Record<string, number>> = {
  openstack: 25,
  aws: 26,
  azure: 29,
  vsphere: 29,
  gce: 30,
};

const GATES = ['DisableCloudProviders', 'DisableKubeletCloudCredentialProviders'] as const;

/** Whether a binary of this minor contains the provider `name`. */
export function compiledIn(name: string, minor: number): boolean {
  const last = LAST_MINOR_WITH[name];
  return last !== undefined && minor <= last;
}

/** Whether `name` is one of the in-tree providers (whatever the minor). */
export function isInTreeName(name: string): boolean {
  return LAST_MINOR_WITH[name] !== undefined;
}

/** A gate's value at this minor: as set in --feature-gates, else its default (on from 1.29). */
function gateOn(flags: ReadonlyMap<string, string>, gate: (typeof GATES)[number], minor: number): boolean {
  return gateValue(flags, gate) ?? minor >= 29;
}

function gatesSet(flags: ReadonlyMap<string, string>): { gate: string; value: string }[] {
  return (flags.get('feature-gates') ?? '')
    .split(',')
    .map((e) => e.split('=').map((s) => s.trim()))
    .filter(([k]) => (GATES as readonly string[]).includes(k ?? ''))
    .map(([gate, value]) => ({ gate: gate as string, value: value ?? '' }));
}

function parseError(binary: Binary, minor: number, flags: ReadonlyMap<string, string>): string | undefined {
  const gone = [...flags.keys()].find(
    (f) =>
      (binary === 'kube-apiserver' && minor >= 33 && (f === 'cloud-provider' || f === 'cloud-config')) ||
      (binary === 'kubelet' && minor >= 34 && f === 'cloud-config') ||
      // The in-tree ACR credential provider's flag went with its code.
      (binary === 'kubelet' && minor >= 30 && f === 'azure-container-registry-config') ||
      // The drop-in directory for KubeletConfiguration came in 1.28 (KEP-3983).
      (binary === 'kubelet' && minor < 28 && f === 'config-dir'),
  );
  if (gone === undefined) return undefined;
  return binary === 'kubelet'
    ? `failed to parse kubelet flag: unknown flag: --${gone}`
    : `unknown flag: --${gone}`;
}

function gateError(minor: number, flags: ReadonlyMap<string, string>): string | undefined {
  for (const { gate, value } of gatesSet(flags)) {
    if (minor >= 33) return `unrecognized feature gate: ${gate}`;
    if (minor >= 31 && value === 'false') {
      return `invalid argument "${gate}=false" for "--feature-gates" flag: cannot set feature gate ${gate} to false, feature is locked to true`;
    }
  }
  return undefined;
}

function apiServerProviderErrors(
  provider: string,
  minor: number,
  flags: ReadonlyMap<string, string>,
): string[] {
  if (provider === '' || minor < 29) return [];
  const want = provider === 'external';
  if (!want && !compiledIn(provider, minor)) return [`unknown --cloud-provider: ${provider}`];
  return GATES.filter((g) => gateOn(flags, g, minor) !== want).map(
    (g) => `when using --cloud-provider set to '${provider}', please set ${g} feature to ${want}`,
  );
}

function initError(binary: Binary, provider: string, minor: number, flags: ReadonlyMap<string, string>) {
  if (provider === '' || provider === 'external') return undefined;
  if (!compiledIn(provider, minor)) {
    return binary === 'kubelet'
      ? `failed to run Kubelet: unknown cloud provider "${provider}"`
      : `cloud provider could not be initialized: unknown cloud provider "${provider}"`;
  }
  if (minor < 22 || !gateOn(flags, 'DisableCloudProviders', minor)) return undefined;
  const disabled = `cloud provider "${provider}" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider`;
  return binary === 'kubelet' ? `failed to run Kubelet: failed to create kubelet: ${disabled}` : disabled;
}

/** Every error `binary` of this minor exits with at start for these flags ([] when it starts). */
export function startErrors(binary: Binary, minor: number, flags: ReadonlyMap<string, string>): string[] {
  const early = parseError(binary, minor, flags) ?? gateError(minor, flags);
  if (early) return [early];
  const provider = flags.get('cloud-provider') ?? '';
  if (binary === 'kube-apiserver') return apiServerProviderErrors(provider, minor, flags);
  const error = initError(binary, provider, minor, flags) ?? nodeIPError(binary, provider, minor, flags);
  return error ? [error] : [];
}

/** The kubelet reads --node-ip after its cloud provider (cmd/kubelet/app/server.go RunKubelet). */
function nodeIPError(binary: Binary, provider: string, minor: number, flags: ReadonlyMap<string, string>) {
  if (binary !== 'kubelet') return undefined;
  const read = kubeletNodeIPs(flags.get('node-ip'), provider, minor);
  return 'error' in read ? `failed to run Kubelet: ${read.error}` : undefined;
}

/** Why `binary` of this minor exits at start with these flags, as it logs it; undefined when it starts. */
export function startProblem(
  binary: Binary,
  minor: number,
  flags: ReadonlyMap<string, string>,
): string | undefined {
  const errors = startErrors(binary, minor, flags);
  // kube-apiserver reports several validation errors as one list (utilerrors.NewAggregate).
  return errors.length > 1 ? `[${errors.join(', ')}]` : errors[0];
}
