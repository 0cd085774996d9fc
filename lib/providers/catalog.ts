/**
 * What ccm-migrate knows about each provider's external cloud-controller-manager (CCM). Every provider has
 * an identity (its in-tree name, its providerID scheme) and the facts of its CCM (images, manifest,
 * lease …), each provider's in its own module (../shared/reference/PROVIDER-FACTS.md §1–§6).
 */
import {
  IN_TREE_REMOVED_IN,
  type InTreeProvider,
  kubernetesMinor,
} from '../controlplane/cloud-flag-rules.ts';
import { InvalidInputError, PreflightFailedError, UnsupportedProviderError } from '../errors.ts';
import { AWS } from './aws.ts';
import { AZURE } from './azure.ts';
import { GCP } from './gcp.ts';
import { IBM } from './ibm.ts';
import { OPENSTACK } from './openstack.ts';
import { VSPHERE } from './vsphere.ts';

export const PROVIDERS = ['aws', 'azure', 'gcp', 'vsphere', 'openstack', 'ibm'] as const;
export type ProviderId = (typeof PROVIDERS)[number];

export interface ProviderIdentity {
  readonly id: ProviderId;
  readonly displayName: string;
  /** The in-tree `--cloud-provider` value; undefined for a provider that never was in-tree (IBM). */
  readonly inTreeName: InTreeProvider | undefined;
  /** The scheme of its nodes' providerIDs (`aws` in `aws:///us-east-1a/i-…`). */
  readonly providerIdScheme: string;
}

/**
 * Identities of all six, from PROVIDER-FACTS.md §8 ("Quick matrix": `--cloud-provider`, in-tree name,
 * providerID).
 */
const IDENTITIES: Readonly<Record<ProviderId, ProviderIdentity>> = {
  aws: { id: 'aws', displayName: 'AWS', inTreeName: 'aws', providerIdScheme: 'aws' },
  azure: { id: 'azure', displayName: 'Azure', inTreeName: 'azure', providerIdScheme: 'azure' },
  gcp: { id: 'gcp', displayName: 'Google Cloud', inTreeName: 'gce', providerIdScheme: 'gce' },
  vsphere: { id: 'vsphere', displayName: 'vSphere', inTreeName: 'vsphere', providerIdScheme: 'vsphere' },
  openstack: {
    id: 'openstack',
    displayName: 'OpenStack',
    inTreeName: 'openstack',
    providerIdScheme: 'openstack',
  },
  ibm: { id: 'ibm', displayName: 'IBM Cloud', inTreeName: undefined, providerIdScheme: 'ibm' },
};

/** A node's instance, as its providerID names it. */
export interface ProviderInstance {
  readonly zone?: string;
  readonly instanceId: string;
}

/** The facts of a provider that ccm-migrate migrates (each in its own module, e.g. aws.ts). */
export interface ProviderDetails {
  /** `--cloud-provider` of the external CCM (IBM's is `ibm` although it has no in-tree name). */
  readonly ccmCloudProvider: string;
  /**
   * The CCM image for each Kubernetes minor (1.x → image). Only images known to be published: a minor
   * without one borrows the previous minor's (see ccmImageFor).
   */
  readonly ccmImages: Readonly<Record<number, string>>;
  /** Where the CCM runs: its namespace, Deployment and container. */
  readonly namespace: string;
  readonly deploymentName: string;
  /** The container the twin (and `kubectl logs`) look for; the one render sets image and flags on. */
  readonly containerName: string;
  /** The coordination.k8s.io Lease its leader holds (in `namespace`). */
  readonly leaseName: string;
  /** Its objects, a multi-document YAML under assets/providers/. */
  readonly manifest: string;
  /** The file name the CCM reads its cloud config as (the key in the config Secret). */
  readonly cloudConfigFile: string;
  /**
   * Whether the CCM cannot start without a cloud config (credentials or account ids live only there);
   * absent: it can (AWS, GCP read the instance metadata).
   */
  readonly cloudConfigRequired?: boolean;
  /**
   * For a provider that never was in-tree (IBM): where its clusters keep the CCM's cloud config on every
   * control-plane node. No kube-controller-manager `--cloud-config` names one there, so preflight requires
   * the file at this path and the CCM mounts it from there, as it mounts an in-tree one.
   */
  readonly cloudConfigHostPath?: string;
  /** A per-node component that initialises nodes for the CCM (Azure's cloud-node-manager DaemonSet). */
  readonly nodeManager?: NodeManager;
  /**
   * Whether its CCM binary registers k8s.io/cloud-provider's node controller flags (`--concurrent-node-syncs`,
   * in cloud-provider v0.27 on); absent: it does. Azure's registers its own flag sets without them
   * (cmd/cloud-controller-manager/app/options, every release to v1.36): the flag would make it exit.
   */
  readonly nodeControllerFlags?: false;
  /** How the CCM takes node IPAM over from kube-controller-manager, for a provider whose CCM can. */
  readonly nodeIpam?: NodeIpamHandover;
  /**
   * Whether its in-tree provider (and CCM) programs cloud routes for node podCIDRs: Routes() answers (the
   * route controller runs nothing where it does not, as in-tree vSphere's never did).
   */
  readonly cloudRoutes?: boolean;
  /**
   * The provider's CSI drivers, among them those that serve its in-tree volume plugins under CSI migration
   * (csi-migration.ts maps each plugin to its driver; preflight requires it installed and registered).
   */
  readonly csiDrivers: readonly string[];
  /** The instance a providerID of this provider names; undefined when it is not one. */
  parseProviderID(providerID: string): ProviderInstance | undefined;
}

export interface NodeManager {
  readonly daemonSetName: string;
  /** The container render sets the image on (an image override uses this name too). */
  readonly containerName: string;
  /** Its image per Kubernetes minor, released with the CCM's: render takes the minor the CCM's image has. */
  readonly images: Readonly<Record<number, string>>;
}

export interface NodeIpamHandover {
  /** Flags render sets on the CCM when it allocates node CIDRs (with `--cluster-cidr` from the cluster). */
  readonly ccmFlags: Readonly<Record<string, string>>;
  /** Flags kube-controller-manager then runs with: exactly one of the two may run node IPAM. */
  readonly kcmFlags: Readonly<Record<string, string>>;
}

export type ProviderFacts = ProviderIdentity & ProviderDetails;

const DETAILS: Readonly<Record<ProviderId, ProviderDetails>> = {
  aws: AWS,
  azure: AZURE,
  gcp: GCP,
  vsphere: VSPHERE,
  openstack: OPENSTACK,
  ibm: IBM,
};

export function isProviderId(id: string): id is ProviderId {
  return (PROVIDERS as readonly string[]).includes(id);
}

export function providerIdentity(id: ProviderId): ProviderIdentity {
  return IDENTITIES[id];
}

/** The facts of a provider ccm-migrate knows. */
export function knownFacts(id: ProviderId): ProviderFacts {
  return { ...IDENTITIES[id], ...DETAILS[id] };
}

/** The facts of a provider, or UnsupportedProviderError naming the ones ccm-migrate knows. */
export function providerFacts(id: string): ProviderFacts {
  if (!isProviderId(id)) {
    throw new UnsupportedProviderError(
      `unknown provider ${JSON.stringify(id)}: ccm-migrate knows ${PROVIDERS.join(', ')}`,
    );
  }
  return knownFacts(id);
}

/**
 * Whether the provider never had an in-tree provider (IBM): its clusters are external from birth, so an
 * upgrade installs its CCM (nothing in-tree to move) and there is no downgrade target.
 */
export function neverInTree(id: ProviderId): boolean {
  return IDENTITIES[id].inTreeName === undefined;
}

/** The minor (1.x) whose binaries no longer have the provider in-tree; undefined for IBM (never in-tree). */
export function inTreeRemovedIn(id: ProviderId): number | undefined {
  const name = IDENTITIES[id].inTreeName;
  return name === undefined ? undefined : IN_TREE_REMOVED_IN[name];
}

/**
 * The in-tree `--cloud-provider` value a downgrade restores. IBM has none: its CCM is the only way it ever
 * ran, so a downgrade is refused before anything changes.
 */
export function inTreeTarget(id: ProviderId): InTreeProvider {
  const { inTreeName, displayName } = IDENTITIES[id];
  if (inTreeName === undefined) {
    throw new PreflightFailedError(
      `${displayName} (${id}) never had an in-tree cloud provider: there is nothing to downgrade to; its external cloud-controller-manager is the only supported mode`,
    );
  }
  return inTreeName;
}

/** The provider whose in-tree `--cloud-provider` value this is (`gce` → gcp); undefined for any other. */
export function providerForInTreeName(name: string): ProviderId | undefined {
  return PROVIDERS.find((p) => IDENTITIES[p].inTreeName !== undefined && IDENTITIES[p].inTreeName === name);
}

export interface CcmImage {
  readonly image: string;
  /** The Kubernetes minor the image is built for (26 for 1.26). */
  readonly minor: number;
}

/**
 * The CCM image for a cluster at `kubernetesVersion`: the one of its minor, else of the minor before. A CCM
 * follows kube-controller-manager's version skew policy: never newer than kube-apiserver, and the cloud
 * providers only promise compatibility with their own minor (PROVIDER-FACTS.md §0.2); one minor older is
 * the tolerance ccm-migrate allows when a release has no image yet.
 */
export function ccmImageFor(provider: string, kubernetesVersion: string): CcmImage {
  const facts = providerFacts(provider);
  let minor: number;
  try {
    minor = kubernetesMinor(kubernetesVersion);
  } catch {
    throw new InvalidInputError(`not a Kubernetes version: ${JSON.stringify(kubernetesVersion)}`);
  }
  for (const m of [minor, minor - 1]) {
    const image = facts.ccmImages[m];
    if (image) return { image, minor: m };
  }
  const minors = Object.keys(facts.ccmImages).map(Number);
  throw new UnsupportedProviderError(
    `no ${facts.displayName} cloud-controller-manager for Kubernetes ${kubernetesVersion}: ccm-migrate has images ` +
      `for 1.${Math.min(...minors)} to 1.${Math.max(...minors)}, and a CCM may be one minor older than the cluster, never newer`,
  );
}
