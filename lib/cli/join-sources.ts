/**
 * Where a node that joins later gets its kubelet flags: join-time templates that live outside the cluster's
 * nodes, which the upgrade does not edit. Left as they were, every new node comes back on the in-tree
 * provider (cluster-api-provider-azure#2591; KubeOne asks users to roll their MachineDeployments). The
 * upgrade's summary lists them with what to change; field names from the Cluster API providers' templates
 * (KubeadmConfigTemplate, KubeadmControlPlane), kubeadm's JoinConfiguration and kOps' cluster spec.
 */

/** What every template must say of the kubelet once the cluster is external. */
const KUBELET_CHANGE =
  'cloud-provider: external; no cloud-config; no DisableCloudProviders or DisableKubeletCloudCredentialProviders in feature-gates';

export interface JoinTimeSource {
  /** What it is; for a Kubernetes object, its kind first. */
  readonly source: string;
  /** Where in it the kubelet's flags are, as field paths. */
  readonly fields: readonly string[];
  readonly change: string;
}

export const JOIN_TIME_SOURCES: readonly JoinTimeSource[] = [
  {
    source: 'user data / cloud-init (launch template, scale set, instance template)',
    fields: [
      'the kubelet flags it writes (kubeadm-flags.env, /etc/default/kubelet, /etc/sysconfig/kubelet, or its kubeadm join config)',
    ],
    change:
      '--cloud-provider=external; no --cloud-config; no DisableCloudProviders or DisableKubeletCloudCredentialProviders in --feature-gates',
  },
  {
    source: 'KubeadmConfigTemplate (Cluster API workers)',
    fields: ['spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs'],
    change: `${KUBELET_CHANGE}; then roll the MachineDeployments`,
  },
  {
    source: 'KubeadmControlPlane (Cluster API)',
    fields: [
      'spec.kubeadmConfigSpec.initConfiguration.nodeRegistration.kubeletExtraArgs',
      'spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.kubeletExtraArgs',
    ],
    change: `${KUBELET_CHANGE}; and in spec.kubeadmConfigSpec.clusterConfiguration, apiServer.extraArgs without cloud-provider and cloud-config, controllerManager.extraArgs cloud-provider: external without cloud-config (their cloud-config extraVolumes dropped)`,
  },
  {
    source: 'JoinConfiguration (kubeadm join --config)',
    fields: ['nodeRegistration.kubeletExtraArgs'],
    change: KUBELET_CHANGE,
  },
  {
    source: 'kOps Cluster and InstanceGroups',
    fields: [
      'Cluster spec.externalCloudControllerManager',
      'spec.kubelet.cloudProvider (Cluster and each InstanceGroup)',
    ],
    change:
      'externalCloudControllerManager: {} and kubelet cloudProvider: external; then kops update cluster --yes',
  },
];

/** The summary's lines: why, then one per source. */
export function joinSourcesNote(): string {
  const lines = [
    'Nodes that join later take their kubelet flags from templates ccm-migrate does not edit; change each one you use,',
    'or new nodes come back in-tree (`ccm-migrate drift --deep --remediate --expect external` flips them):',
    ...JOIN_TIME_SOURCES.map((s) => `  - ${s.source}: ${s.fields.join(', ')}: ${s.change}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** What a run's summary ends with: the note after an upgrade that succeeded, nothing after any other run. */
export function joinSourcesAfter(kind: 'upgrade' | 'downgrade', succeeded: boolean): string {
  return kind === 'upgrade' && succeeded ? `\n${joinSourcesNote()}` : '';
}
