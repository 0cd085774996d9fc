/**
 * The events the upgrade's steps receive: one zod schema each, the single source of their shape for the
 * state machine's payloads, the Lambda handlers and the local engine. Payloads carry ids and small
 * summaries only; what a step needs from earlier ones (provider, image, snapshot) it reads from the run store.
 */
import * as z from 'zod';
import { PROVIDERS } from '../providers/catalog.ts';
import { CCM_WORKLOADS } from '../providers/ccm-workload.ts';
import { ImageOverridesSchema } from '../providers/image-overrides.ts';

/** A Kubernetes-style name: what clusterId and runId must be (they name Jobs, files and executions). */
export const ResourceName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'lower-case letters, digits and -, at most 63');

export const RunIds = z.object({ clusterId: ResourceName, runId: ResourceName });
export type RunIds = z.infer<typeof RunIds>;

export const UpgradeOptionsSchema = z.object({
  /** The provider the operator says the cluster runs; preflight refuses a cluster that says otherwise. */
  provider: z.enum(PROVIDERS).optional(),
  /** Replicas of the CCM once started; by default one per control-plane node, at most 3. */
  ccmReplicas: z.int().min(1).max(5).optional(),
  /**
   * The CCM as a Deployment with leader election (default) or a DaemonSet on every control-plane node
   * (upstream's AWS and OpenStack manifests); a DaemonSet ignores ccmReplicas. Recorded in the snapshot:
   * a downgrade removes the kind its upgrade ran.
   */
  ccmWorkload: z.enum(CCM_WORKLOADS).optional(),
  /**
   * Hand the cloud controllers from kube-controller-manager to the CCM under the migration lease (KEP-2436).
   * Default: on with more than one control-plane node where the version supports it (1.24+, GA).
   */
  leaderMigration: z.boolean().optional(),
  /**
   * Wait after preflight, before the first change, for an operator's answer (`ccm-migrate approve`; in local
   * mode, asked at the terminal). Absent: false. Upgrades only.
   */
  requireApproval: z.boolean().optional(),
  /**
   * Images by CCM container name (`cloud-controller-manager`; Azure's `cloud-node-manager`) instead of the
   * catalog's: a mirrored registry. Preflight records them in the snapshot, which every later render (and
   * the way back) uses. Upgrades only: a downgrade renders the CCM as its upgrade recorded it.
   */
  images: ImageOverridesSchema.optional(),
  /**
   * Take over CCM objects of the names the upgrade applies that ccm-migrate did not create (no
   * app.kubernetes.io/managed-by: ccm-migrate): they become ours, and the way back deletes them. Absent:
   * preflight refuses a cluster that has any. Upgrades only.
   */
  adopt: z.boolean().optional(),
  /**
   * Go on when the CSI driver of an in-tree volume or StorageClass is not installed or not registered on
   * every node that needs it (preflight refuses otherwise); the snapshot records it. Upgrades only.
   */
  allowMissingCsi: z.boolean().optional(),
});
export type UpgradeOptions = z.infer<typeof UpgradeOptionsSchema>;

/** The input of an upgrade or downgrade execution. */
export const UpgradeInputSchema = RunIds.extend({
  /** Worker kubelets restarted at once (the Map's MaxConcurrency). */
  maxUnavailable: z.int().min(1).max(100).default(1),
  options: UpgradeOptionsSchema.default({}),
});
export type UpgradeInput = z.infer<typeof UpgradeInputSchema>;

export const PreflightEventSchema = RunIds.extend({ options: UpgradeOptionsSchema.default({}) });
/**
 * Phase 1 of upstream's leader migration (kubernetes.io "Migrate Replicated Control Plane To Use Cloud
 * Controller Manager"): kube-controller-manager gets --enable-leader-migration and keeps its provider.
 */
export const LeaderMigrationPhaseSchema = z.literal('enable-leader-migration');
/**
 * A node Map's items and how many run at once, for a step that pre-starts agents (lib/steps/prestart.ts):
 * a node's step, the agent of the node `lookahead` places after its own, whose turn comes once its slot
 * frees; the step before the Map, the first `lookahead`. Absent: no pre-start.
 */
const PrestartFields = {
  order: z.array(z.string().min(1)).optional(),
  lookahead: z.int().min(1).optional(),
};
export type PrestartEvent = { order?: string[]; lookahead?: number };

export const NodeEventSchema = RunIds.extend({
  node: z.string().min(1),
  /** Absent: the node moves off the in-tree provider. */
  phase: LeaderMigrationPhaseSchema.optional(),
  ...PrestartFields,
});
export type NodeEvent = z.infer<typeof NodeEventSchema>;

/**
 * The CCM started beside in-tree kube-controller-managers (phase 2, leader migration) or after them; or,
 * on the way back (`handBack`), rolled out under leader migration before the controller managers return.
 */
export const ActivateEventSchema = RunIds.extend({
  leaderMigration: z.boolean().default(false),
  handBack: z.boolean().default(false),
  /**
   * The CCM, which started without its cloud-node-lifecycle controller, gets its full controller set: the
   * step after every node was initialised by it (verify-node).
   */
  nodeLifecycle: z.boolean().default(false),
  /** The kubelet flips' order and batch: the CCM's start pre-starts the first batch's agents. */
  ...PrestartFields,
});
export type ActivateEvent = z.infer<typeof ActivateEventSchema>;

export const LeaderMigrationDecisionSchema = z.object({
  enabled: z.boolean(),
  /** Why, in words for the plan and the progress output. */
  reason: z.string(),
});
export type LeaderMigrationDecision = z.infer<typeof LeaderMigrationDecisionSchema>;

export const PreflightResultSchema = z.object({
  alreadyExternal: z.boolean(),
  provider: z.enum(PROVIDERS),
  kubernetesVersion: z.string(),
  controlPlaneNodes: z.array(z.string()),
  workerNodes: z.array(z.string()),
  /** Every node in the order its kubelet flips: control-plane nodes first. */
  kubeletOrder: z.array(z.string()),
  leaderMigration: LeaderMigrationDecisionSchema,
});
export type PreflightResult = z.infer<typeof PreflightResultSchema>;

export const VerificationSchema = z.object({
  nodes: z.int(),
  /** The pod that runs the cloud loops: the CCM's leader, or an in-tree kube-controller-manager. */
  cloudController: z.string(),
  loadBalancers: z.int(),
});
export type Verification = z.infer<typeof VerificationSchema>;

export const FinalizeEventSchema = RunIds.extend({ verification: VerificationSchema });

/** What Step Functions puts in `$.error` when a Catch fires. */
export const FailureEventSchema = RunIds.extend({
  error: z.object({ Error: z.string(), Cause: z.string().optional() }),
});

/** A step that puts back what an earlier run changed: the run whose node backups and snapshot it uses. */
export const RestoreEventSchema = RunIds.extend({ sourceRunId: ResourceName });
export type RestoreEvent = z.infer<typeof RestoreEventSchema>;
export const RestoreNodeEventSchema = RestoreEventSchema.extend({
  node: z.string().min(1),
  /** Put the node's kube-controller-manager back with --enable-leader-migration (the downgrade's handback). */
  leaderMigration: z.boolean().default(false),
  ...PrestartFields,
});
export type RestoreNodeEvent = z.infer<typeof RestoreNodeEventSchema>;

export const DowngradePreflightResultSchema = z.object({
  alreadyInTree: z.boolean(),
  /** What the approval gate's request names (state-machines/approval-gate.ts). */
  provider: z.string(),
  kubernetesVersion: z.string(),
  /** The upgrade run whose snapshot and backups the downgrade restores. */
  sourceRunId: ResourceName,
  controlPlaneNodes: z.array(z.string()),
  kubeletOrder: z.array(z.string()),
  leaderMigration: LeaderMigrationDecisionSchema,
});
export type DowngradePreflightResult = z.infer<typeof DowngradePreflightResultSchema>;
