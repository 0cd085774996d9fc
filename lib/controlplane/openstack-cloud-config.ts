/**
 * The in-tree OpenStack cloud.conf made readable by the external OCCM. The in-tree provider could take its
 * credentials from a Kubernetes Secret named by `[Global] secret-name` / `secret-namespace` (reached with
 * `kubeconfig-path`); OCCM reads none of those keys and would start without credentials. The rules are
 * OpenShift's CloudConfigTransformer (openshift/cluster-cloud-controller-manager-operator
 * pkg/cloud/openstack/openstack.go, PROVIDER-FACTS.md §5): drop the three legacy keys, read the credentials
 * from the Secret's `clouds.yaml` (the key OpenShift's `kube-system/openstack-credentials` Secret carries)
 * mounted at /etc/openstack/secret with `use-clouds`, `clouds-file` and `cloud = openstack`, drop
 * `[BlockStorage]` (OCCM has no volumes) and `[LoadBalancer] use-octavia` (OCCM always uses Octavia).
 * OpenShift's other changes (max-shared-lb=1, manage-security-groups=true) are its own defaults, not a
 * format difference: a carried-over config keeps the behaviour it had.
 *
 * `use-octavia = false` cannot be carried over: the in-tree provider then sent its load balancers to Neutron
 * LBaaS, which OCCM does not speak (PROVIDER-FACTS.md §5); the orchestrator refuses such a config, and
 * `openstackUsesOctavia` tells it.
 *
 * Unlike OpenShift, any Secret name is accepted (its installer's stub is only one value); the namespace must
 * be the CCM's, which the orchestrator checks, since a pod mounts Secrets of its own namespace only.
 */
import {
  deleteKey,
  deleteSection,
  findSection,
  getKey,
  parseIni,
  serializeIni,
  setKey,
} from './cloud-config-ini.ts';

/** Where the CCM mounts the credentials Secret, as OpenShift's CCM Deployment does. */
export const OPENSTACK_CREDENTIALS_DIR = '/etc/openstack/secret';
/** The Secret key holding the clouds.yaml, and the cloud in it, as OpenShift's installer writes them. */
export const OPENSTACK_CREDENTIALS_KEY = 'clouds.yaml';
export const OPENSTACK_CLOUD_NAME = 'openstack';
/**
 * The in-tree provider's namespace when `secret-namespace` is not given: kube-system, the only value
 * OpenShift's transformer accepts (inferred: the in-tree code was not read for its default).
 */
export const DEFAULT_SECRET_NAMESPACE = 'kube-system';

const LEGACY_GLOBAL_KEYS = ['secret-name', 'secret-namespace', 'kubeconfig-path'] as const;

export interface CredentialsSecretRef {
  readonly name: string;
  readonly namespace: string;
}

export interface OpenstackTranslation {
  /** The config OCCM reads. */
  readonly text: string;
  readonly secret: CredentialsSecretRef;
}

/** gcfg's booleans (gopkg.in/gcfg.v1 types/bool.go), matched case-insensitively; a bare key is true. */
const GCFG_FALSE = new Set(['false', 'no', 'off', '0']);

/**
 * `[LoadBalancer] use-octavia` as the in-tree provider read it, or undefined when the config does not set
 * it. Throws InvalidInputError (naming a line number) for text outside the INI subset.
 * An absent key was false in-tree too (Go's zero value: legacy-cloud-providers openstack readConfig sets
 * no default), the network endpoint's LBaaS API, yet it is carried over: only an explicit `false` says the
 * operator chose Neutron LBaaS, and where neutron-lbaas is retired (OpenStack Train) such a provider
 * created no load balancers to lose. A cloud still running neutron-lbaas is not told apart here.
 */
export function openstackUsesOctavia(text: string): boolean | undefined {
  const loadBalancer = findSection(parseIni(text), 'LoadBalancer');
  const value = loadBalancer && getKey(loadBalancer, 'use-octavia');
  return value === undefined ? undefined : !GCFG_FALSE.has(value.toLowerCase());
}

/** The translated copy's path: next to the original, which stays for the way back. */
export function translatedCloudConfigPath(source: string): string {
  return `${source}.external`;
}

/**
 * The config for OCCM, or undefined when it names no credentials Secret (OCCM reads it as it is). Throws
 * InvalidInputError (naming a line number) for text outside the INI subset.
 */
export function translateOpenstackCloudConfig(text: string): OpenstackTranslation | undefined {
  const doc = parseIni(text);
  const global = findSection(doc, 'Global');
  const name = global && getKey(global, 'secret-name');
  if (!global || !name) return undefined;
  const namespace = getKey(global, 'secret-namespace') || DEFAULT_SECRET_NAMESPACE;
  for (const key of LEGACY_GLOBAL_KEYS) deleteKey(global, key);
  setKey(global, 'use-clouds', 'true');
  setKey(global, 'clouds-file', `${OPENSTACK_CREDENTIALS_DIR}/${OPENSTACK_CREDENTIALS_KEY}`);
  setKey(global, 'cloud', OPENSTACK_CLOUD_NAME);
  deleteSection(doc, 'BlockStorage');
  const loadBalancer = findSection(doc, 'LoadBalancer');
  if (loadBalancer) deleteKey(loadBalancer, 'use-octavia');
  return { text: serializeIni(doc), secret: { name, namespace } };
}
