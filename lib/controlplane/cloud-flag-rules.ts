/**
 * Which cloud flags each Kubernetes version still accepts, and the error the binary exits with when it does
 * not. The twin's kubelet crash-loops static pods by these rules; preflight uses them to refuse an upgrade
 * whose flags the target version would reject.
 *
 * Sources (kubernetes/kubernetes):
 * - removal of the in-tree providers: ../shared/reference/PROVIDER-FACTS.md §0.1 (OpenStack 1.26, AWS 1.27,
 *   Azure and vSphere 1.30, GCE 1.31); a removed provider is no longer registered, so
 *   `cloudprovider.InitCloudProvider` answers `unknown cloud provider "<name>"`
 *   (staging/src/k8s.io/cloud-provider/plugins.go).
 * - DisableCloudProviders: beta and on by default in 1.29 and 1.30 (GA from 1.31, when every in-tree
 *   provider is gone): the kubelet (pkg/kubelet/kubelet.go NewMainKubelet) and KCM
 *   (cmd/kube-controller-manager/app/controllermanager.go createCloudProvider) refuse an in-tree provider
 *   with "…but built-in cloud providers are disabled…".
 * - kube-apiserver checks --cloud-provider only from 1.29 (CloudProviderOptions.Validate,
 *   pkg/kubeapiserver/options/cloudprovider.go; the v1.25–v1.28 sources have no check and v1.26.15
 *   starts with any name): an in-tree provider needs DisableCloudProviders and
 *   DisableKubeletCloudCredentialProviders both false, `external` both true, any other name is unknown.
 *   test/twin/binary-start-real.test.ts checks this against the real binaries.
 * - kube-apiserver dropped `--cloud-provider`/`--cloud-config` in 1.33 and the kubelet `--cloud-config` in
 *   1.34: pflag rejects them as `unknown flag: --<name>`; the kubelet wraps parse errors as
 *   "failed to parse kubelet flag: …" (cmd/kubelet/app/server.go).
 */

export type CloudFlagComponent = 'kube-apiserver' | 'kube-controller-manager' | 'kubelet';

/** The `--cloud-provider` values the in-tree providers answered to (`external` and '' are not in-tree). */
export const IN_TREE_PROVIDERS = ['aws', 'azure', 'gce', 'vsphere', 'openstack'] as const;
export type InTreeProvider = (typeof IN_TREE_PROVIDERS)[number];

/** The minor version (1.x) whose binaries no longer contain the provider. */
export const IN_TREE_REMOVED_IN: Readonly<Record<InTreeProvider, number>> = {
  openstack: 26,
  aws: 27,
  azure: 30,
  vsphere: 30,
  gce: 31,
};

/** DisableCloudProviders: alpha (off unless set) from 1.22, on by default from 1.29 (beta; GA in 1.31). */
const GATE_INTRODUCED_IN = 22;
const GATE_DEFAULT_ON_FROM = 29;
/** Both gates are GA from 1.31: locked to true, and a binary refuses to start when told false. */
const GATES_LOCKED_FROM = 31;
const LOCKED_GATES = ['DisableCloudProviders', 'DisableKubeletCloudCredentialProviders'] as const;
const KAS_CLOUD_FLAGS_REMOVED_IN = 33;
const KAS_VALIDATES_PROVIDER_FROM = 29;
const KUBELET_CLOUD_CONFIG_REMOVED_IN = 34;

export function isInTreeProvider(name: string): name is InTreeProvider {
  return (IN_TREE_PROVIDERS as readonly string[]).includes(name);
}

/** The minor of a Kubernetes version (`v1.27.3` → 27); throws for something that is not `[v]1.<minor>…`. */
export function kubernetesMinor(version: string): number {
  const m = /^v?1\.(\d+)(?:\.|$)/.exec(version);
  if (!m) throw new Error(`not a Kubernetes version: ${version}`);
  return Number(m[1]);
}

/**
 * The value of a feature gate in `--feature-gates=A=true,B=false`, or undefined when the flag does not set
 * it. An unparseable entry counts as unset (the binary itself would refuse it with its own error).
 */
export function featureGate(flags: ReadonlyMap<string, string>, gate: string): boolean | undefined {
  let value: boolean | undefined;
  for (const entry of (flags.get('feature-gates') ?? '').split(',')) {
    const [k, v] = entry.split('=').map((s) => s.trim());
    if (k === gate && (v === 'true' || v === 'false')) value = v === 'true';
  }
  return value;
}

function unknownFlag(component: CloudFlagComponent, flag: string): string {
  const message = `unknown flag: --${flag}`;
  return component === 'kubelet' ? `failed to parse kubelet flag: ${message}` : message;
}

/** The provider is not compiled into this binary (removed, or never in-tree). */
function unknownProvider(component: CloudFlagComponent, provider: string): string {
  switch (component) {
    case 'kubelet':
      return `failed to run Kubelet: unknown cloud provider "${provider}"`;
    case 'kube-controller-manager':
      return `cloud provider could not be initialized: unknown cloud provider "${provider}"`;
    case 'kube-apiserver':
      return `unknown --cloud-provider: ${provider}`;
  }
}

/** The provider is compiled in but DisableCloudProviders is on (kubelet, kube-controller-manager). */
function disabledProvider(component: CloudFlagComponent, provider: string): string {
  const disabled = `cloud provider "${provider}" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider`;
  return component === 'kubelet' ? `failed to run Kubelet: failed to create kubelet: ${disabled}` : disabled;
}

/** kube-apiserver's own check of --cloud-provider (its first error). */
function apiServerProviderProblem(
  provider: string,
  minor: number,
  flags: ReadonlyMap<string, string>,
): string | undefined {
  if (provider === '' || minor < KAS_VALIDATES_PROVIDER_FROM) return undefined;
  const external = provider === 'external';
  if (!external && (!isInTreeProvider(provider) || minor >= IN_TREE_REMOVED_IN[provider])) {
    return unknownProvider('kube-apiserver', provider);
  }
  const gate = LOCKED_GATES.find(
    (g) => (featureGate(flags, g) ?? minor >= GATE_DEFAULT_ON_FROM) !== external,
  );
  return (
    gate && `when using --cloud-provider set to '${provider}', please set ${gate} feature to ${external}`
  );
}

/**
 * Why `component` at `version` would exit at start with these flags (the error text the binary prints),
 * or undefined when its cloud flags are fine. Flags are as parseFlags returns them.
 */
export function cloudFlagProblem(
  component: CloudFlagComponent,
  version: string,
  flags: ReadonlyMap<string, string>,
): string | undefined {
  const minor = kubernetesMinor(version);
  // Flag parsing fails first, at the first removed flag in argument order.
  for (const name of flags.keys()) {
    if (
      component === 'kube-apiserver' &&
      minor >= KAS_CLOUD_FLAGS_REMOVED_IN &&
      (name === 'cloud-provider' || name === 'cloud-config')
    ) {
      return unknownFlag(component, name);
    }
    if (component === 'kubelet' && minor >= KUBELET_CLOUD_CONFIG_REMOVED_IN && name === 'cloud-config') {
      return unknownFlag(component, name);
    }
  }
  // component-base/featuregate: "cannot set feature gate X to false, feature is locked to true".
  for (const gate of minor >= GATES_LOCKED_FROM ? LOCKED_GATES : []) {
    if (featureGate(flags, gate) === false) {
      return `invalid argument "${gate}=false" for "--feature-gates" flag: cannot set feature gate ${gate} to false, feature is locked to true`;
    }
  }
  const provider = flags.get('cloud-provider') ?? '';
  if (component === 'kube-apiserver') return apiServerProviderProblem(provider, minor, flags);
  if (provider === '' || provider === 'external') return undefined;
  if (!isInTreeProvider(provider) || minor >= IN_TREE_REMOVED_IN[provider]) {
    return unknownProvider(component, provider);
  }
  const gateOn = featureGate(flags, 'DisableCloudProviders') ?? minor >= GATE_DEFAULT_ON_FROM;
  if (gateOn && minor >= GATE_INTRODUCED_IN) {
    return disabledProvider(component, provider);
  }
  return undefined;
}
