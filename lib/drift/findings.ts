/**
 * What drift is: a finding per thing that is not as the cluster's desired mode says (external CCM, or the
 * in-tree provider), with the object, what was expected and what was seen. The report's status is
 * `unknown` when the cluster could not be observed: never clean or drifted by default.
 */
import * as z from 'zod';
import { StorageInventorySchema } from '../steps/storage-inventory.ts';

export const FINDING_KINDS = [
  'control-plane-flags',
  'kubelet-flags',
  'ccm-missing',
  'ccm-not-ready',
  'ccm-not-leading',
  'ccm-image-skew',
  'ccm-present',
  'node-stuck-uninitialized',
  'node-without-provider-id',
  'kubeadm-config-flags',
  'leftover-agent-job',
  'csi-driver-missing',
  'in-tree-storage-class',
] as const;

export const FindingSchema = z.object({
  kind: z.enum(FINDING_KINDS),
  /** `Pod kube-system/kube-controller-manager-cp-1`, `Node worker-3`, … */
  object: z.string(),
  expected: z.string(),
  seen: z.string(),
  /** critical: nodes can end unschedulable or controllers fight; warning: a later operation will break it; info: tidiness. */
  severity: z.enum(['critical', 'warning', 'info']),
});
export type Finding = z.infer<typeof FindingSchema>;

export const DesiredModeSchema = z.enum(['external', 'in-tree']);
export type DesiredMode = z.infer<typeof DesiredModeSchema>;

export const DriftReportSchema = z.object({
  clusterId: z.string(),
  expect: DesiredModeSchema,
  depth: z.enum(['shallow', 'deep']),
  status: z.enum(['clean', 'drifted', 'unknown']),
  findings: z.array(FindingSchema),
  checkedAt: z.string(),
  /** API requests the check sent. */
  apiRequests: z.int(),
  /** The in-tree volumes and StorageClasses and the CSI drivers that serve them (absent: unknown). */
  storage: StorageInventorySchema.optional(),
  /** Why the cluster could not be observed (status unknown). */
  error: z.string().optional(),
});
export type DriftReport = z.infer<typeof DriftReportSchema>;
