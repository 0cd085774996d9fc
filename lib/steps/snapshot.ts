/**
 * The way back: what preflight records about the cluster before anything changes. Stored once per run (the
 * first write wins, so a resumed run keeps the state from before its first change), never in a state
 * payload. It holds hashes and cloud-related flags of node files, never their text.
 */
import * as z from 'zod';
import { FileReportSchema } from '../agent/protocol.ts';
import { PROVIDERS } from '../providers/catalog.ts';
import { CCM_WORKLOADS } from '../providers/ccm-workload.ts';
import { NodeNetworkSchema } from '../providers/node-network.ts';
import { PreflightResultSchema } from './schemas.ts';
import { StorageInventorySchema } from './storage-inventory.ts';

export const NodeFactsSchema = z.object({
  role: z.enum(['control-plane', 'worker']),
  providerID: z.string().optional(),
  /** topology.kubernetes.io/{region,zone} and node.kubernetes.io/instance-type, as the CCM must keep them. */
  labels: z.record(z.string(), z.string()),
  addresses: z.array(z.object({ type: z.string(), address: z.string() })),
  /**
   * The addresses preflight predicted the CCM sets (providers/node-addresses.ts): verify takes them as well
   * as `addresses`. Absent (a snapshot from before predictions): the CCM is expected to keep `addresses`.
   */
  predictedAddresses: z.array(z.object({ type: z.string(), address: z.string() })).optional(),
});
export type NodeFacts = z.infer<typeof NodeFactsSchema>;

export const SnapshotSchema = z.object({
  takenAt: z.string(),
  provider: z.enum(PROVIDERS),
  kubernetesVersion: z.string(),
  /** The catalog's CCM image for the cluster's minor. */
  ccmImage: z.string(),
  /**
   * The operator's image overrides by container (UpgradeOptions' `images`, checked when given): every
   * render of the run's CCM objects uses them. Read back as recorded, so that a stricter check later
   * never leaves a run without its way back.
   */
  images: z.record(z.string(), z.string()).optional(),
  /** KCM's --cluster-name: the CCM must use the same, or it orphans every cloud load balancer. */
  clusterName: z.string(),
  ccmReplicas: z.int(),
  /**
   * The kind of the CCM's workload (UpgradeOptions' `ccmWorkload`): every later step, and the way back,
   * renders that kind. Absent (a snapshot from before the option): a Deployment.
   */
  ccmWorkload: z.enum(CCM_WORKLOADS).optional(),
  /**
   * What kube-controller-manager did with node CIDRs and cloud routes (its flags, as preflight read them):
   * the CCM carries its routes and CloudAllocator node IPAM over. Absent (a snapshot from before it was
   * recorded): the CCM programs no routes and KCM keeps node IPAM, as such runs did.
   */
  nodeNetwork: NodeNetworkSchema.optional(),
  nodes: z.record(z.string(), NodeFactsSchema),
  /** Per node, the files the migration reads or changes. */
  files: z.record(
    z.string(),
    z.array(FileReportSchema.pick({ path: true, exists: true, sha256: true, kind: true, flags: true })),
  ),
  /**
   * The in-tree cloud config the CCM cannot read as it is (OpenStack's `[Global] secret-name`): the copy
   * the run writes next to it on every control-plane node, which the CCM mounts with the credentials
   * Secret (names only; the way back removes the copy).
   */
  cloudConfigTranslation: z
    .object({
      source: z.string(),
      target: z.string(),
      credentialsSecret: z.object({ name: z.string(), namespace: z.string() }),
    })
    .optional(),
  /**
   * An upgrade run again on a migrated cluster: the cloud config its deployed CCM mounts, which
   * kube-controller-manager no longer names, so that the run renders the CCM it finds (read by
   * deployed-ccm.ts). Absent on every run that migrates.
   */
  deployedCloudConfig: z.string().optional(),
  /**
   * The nodes have pulled images that need the cloud's credential plugin once the kubelet's in-tree
   * credentials are off: a kubelet that lost its plugin since preflight is refused at its flip.
   */
  imageCredentialsRequired: z.boolean().optional(),
  /** kubeadm's ClusterConfiguration as it was (no secrets: kubeadm keeps those out of it). */
  kubeadmClusterConfiguration: z.string().optional(),
  /** kube-system/kubelet-config's KubeletConfiguration before the run, when the cluster has one. */
  kubeletConfiguration: z.string().optional(),
  loadBalancers: z.array(z.object({ namespace: z.string(), name: z.string(), ingress: z.array(z.string()) })),
  /**
   * The in-tree volumes and StorageClasses and their CSI drivers: verify holds the bound volumes to it.
   * Absent: a snapshot from before it was recorded.
   */
  storage: StorageInventorySchema.optional(),
  /** Preflight found a CSI driver missing and went on, as the operator said (`--allow-missing-csi`). */
  missingCsiAllowed: z.boolean().optional(),
  /**
   * The first preflight's plan (its result): a resumed run that finds a node not Ready goes on with it, so
   * that the steps wait for the node and roll back, instead of ending as if nothing had changed. Absent: a
   * snapshot from before it was recorded.
   */
  plan: PreflightResultSchema.optional(),
});
export type Snapshot = z.infer<typeof SnapshotSchema>;

/** The labels the CCM sets from the cloud and verify compares with the snapshot. */
export const TOPOLOGY_LABELS = [
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'node.kubernetes.io/instance-type',
] as const;

/** The original each file of a node had, as a snapshot recorded it: sha256, or null when it did not exist. */
export function recordedOriginals(snapshot: Snapshot, node: string): Record<string, string | null> {
  return Object.fromEntries(
    (snapshot.files[node] ?? []).map((f) => [f.path, f.exists ? (f.sha256 ?? null) : null]),
  );
}
