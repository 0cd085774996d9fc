/**
 * What the upgrade changes in node files, as agent edits (KEP-2395 "General Guidance"; PROVIDER-FACTS 0.2):
 * kube-apiserver loses --cloud-provider/--cloud-config, kube-controller-manager and kubelet run with
 * --cloud-provider=external and no --cloud-config, and the 1.29–1.30 gates that kept in-tree providers
 * alive go (they are locked on from 1.31, so leaving them blocks the next upgrade).
 */
import type { AgentRequest, StaticPodEdit } from '../agent/protocol.ts';
import { kubernetesMinor } from '../controlplane/cloud-flag-rules.ts';
import type { ClusterConfigurationEdit } from '../controlplane/kubeadm-config.ts';
import { providerFacts } from '../providers/catalog.ts';
import { credentialPluginOf } from '../providers/image-credentials.ts';
import { kcmNodeNetworkFlags } from '../providers/node-network.ts';
import { LEADER_MIGRATION_CONFIG_FLAG, LEADER_MIGRATION_FLAG } from './leader-migration.ts';
import type { Snapshot } from './snapshot.ts';

export const KAS_MANIFEST = '/etc/kubernetes/manifests/kube-apiserver.yaml';
export const KCM_MANIFEST = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
export const CONTROL_PLANE_MANIFESTS = [KAS_MANIFEST, KCM_MANIFEST] as const;

const IN_TREE_GATES = { DisableCloudProviders: null, DisableKubeletCloudCredentialProviders: null };
/**
 * An external kube-controller-manager must not run leader migration (upstream: "MUST NOT have Leader
 * Migration enabled"): its leader would still contend for the migration lease and hold it running nothing.
 */
const EXTERNAL_KCM_FLAGS = {
  'cloud-provider': 'external',
  'cloud-config': null,
  [LEADER_MIGRATION_FLAG]: null,
  [LEADER_MIGRATION_CONFIG_FLAG]: null,
};

export const TO_EXTERNAL_STATIC_PODS: readonly StaticPodEdit[] = [
  {
    path: KAS_MANIFEST,
    flags: { 'cloud-provider': null, 'cloud-config': null },
    featureGates: IN_TREE_GATES,
    dropUnusedCloudConfigVolume: true,
  },
  {
    path: KCM_MANIFEST,
    flags: EXTERNAL_KCM_FLAGS,
    featureGates: IN_TREE_GATES,
    dropUnusedCloudConfigVolume: true,
  },
];

/** Leader migration phase 1: kube-controller-manager joins the migration lease, in-tree provider kept. */
export const ENABLE_LEADER_MIGRATION_STATIC_PODS: readonly StaticPodEdit[] = [
  {
    path: KCM_MANIFEST,
    flags: { [LEADER_MIGRATION_FLAG]: 'true' },
    featureGates: {},
    dropUnusedCloudConfigVolume: false,
  },
];

type SetFlagsKubelet = Extract<AgentRequest, { op: 'set-flags' }>['kubelet'];

export const TO_EXTERNAL_KUBELET = {
  flags: { 'cloud-provider': 'external', 'cloud-config': null },
  featureGates: IN_TREE_GATES,
};

/**
 * One node's kubelet change: external, its Node name kept, and where the cloud has a credential plugin,
 * the kubelet's in-tree image credentials handed to it (refused without it when the cluster needs them).
 */
export function toExternalKubelet(
  run: Pick<Snapshot, 'provider' | 'kubernetesVersion' | 'imageCredentialsRequired'>,
  node: string,
): NonNullable<SetFlagsKubelet> {
  return {
    ...TO_EXTERNAL_KUBELET,
    keepNodeName: node,
    ...(credentialPluginOf(run.provider)
      ? {
          imageCredentials: {
            provider: run.provider,
            minor: kubernetesMinor(run.kubernetesVersion),
            required: run.imageCredentialsRequired ?? false,
          },
        }
      : {}),
  };
}

/** The same changes in kubeadm's ClusterConfiguration, so that `kubeadm upgrade` keeps them. */
export const TO_EXTERNAL_KUBEADM: ClusterConfigurationEdit = {
  apiServer: {
    flags: { 'cloud-provider': null, 'cloud-config': null },
    featureGates: IN_TREE_GATES,
    dropCloudConfigVolume: true,
  },
  controllerManager: {
    flags: EXTERNAL_KCM_FLAGS,
    featureGates: IN_TREE_GATES,
    dropCloudConfigVolume: true,
  },
};

/**
 * kube-controller-manager's further flags in this cluster's move: when its CloudAllocator node IPAM goes to
 * the CCM, it stops allocating (node-network.ts); otherwise none, and every flag it still needs stays.
 */
function kcmNetworkFlags(
  snapshot: Pick<Snapshot, 'provider' | 'nodeNetwork'>,
): Readonly<Record<string, string>> {
  return kcmNodeNetworkFlags(providerFacts(snapshot.provider), snapshot.nodeNetwork);
}

/** The control-plane manifests' edits for this cluster. */
export function toExternalStaticPods(snapshot: Pick<Snapshot, 'provider' | 'nodeNetwork'>): StaticPodEdit[] {
  const extra = kcmNetworkFlags(snapshot);
  return TO_EXTERNAL_STATIC_PODS.map((e) =>
    e.path === KCM_MANIFEST ? { ...e, flags: { ...e.flags, ...extra } } : e,
  );
}

/** kubeadm's ClusterConfiguration edit for this cluster, the same flags as its manifests'. */
export function toExternalKubeadm(
  snapshot: Pick<Snapshot, 'provider' | 'nodeNetwork'>,
): ClusterConfigurationEdit {
  const kcm = TO_EXTERNAL_KUBEADM.controllerManager;
  return {
    ...TO_EXTERNAL_KUBEADM,
    controllerManager: { ...kcm, flags: { ...kcm?.flags, ...kcmNetworkFlags(snapshot) } },
  };
}
