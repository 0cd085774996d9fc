/**
 * The shapes of the core/v1 fields the workload controllers read and write, as they appear in the JSON the
 * twin stores (timestamps are RFC 3339 strings). Only the fields the controllers use are typed.
 */
import type { KubeObject, ObjectMeta } from '../store.ts';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: TaintEffect;
}

export interface Toleration {
  readonly key?: string;
  readonly operator?: 'Exists' | 'Equal';
  readonly value?: string;
  readonly effect?: TaintEffect | '';
  readonly tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  readonly values?: readonly string[];
}

export interface NodeSelectorTerm {
  readonly matchExpressions?: readonly NodeSelectorRequirement[];
  readonly matchFields?: readonly NodeSelectorRequirement[];
}

export interface NodeSelector {
  readonly nodeSelectorTerms: readonly NodeSelectorTerm[];
}

export interface Affinity {
  readonly nodeAffinity?: {
    readonly requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector;
    readonly [field: string]: unknown;
  };
  readonly [field: string]: unknown;
}

export interface PodSpec {
  readonly nodeName?: string;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Toleration[];
  readonly affinity?: Affinity;
  readonly schedulerName?: string;
  readonly hostNetwork?: boolean;
  readonly [field: string]: unknown;
}

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
  readonly lastUpdateTime?: string;
  readonly lastProbeTime?: string | null;
}

export interface PodTemplateSpec {
  readonly metadata?: Pick<ObjectMeta, 'labels' | 'annotations'>;
  readonly spec: PodSpec;
}

export interface Pod extends KubeObject {
  readonly spec: PodSpec;
  readonly status?: {
    readonly phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    readonly conditions?: readonly Condition[];
    readonly [field: string]: unknown;
  };
}

export interface Node extends KubeObject {
  readonly spec?: { readonly taints?: readonly Taint[]; readonly unschedulable?: boolean };
  readonly status?: { readonly conditions?: readonly Condition[] };
}

/** Storage keys of the types the controllers watch. */
export const PODS = 'pods';
export const NODES = 'nodes';
export const DEPLOYMENTS = 'deployments.apps';
export const DAEMONSETS = 'daemonsets.apps';
export const JOBS = 'jobs.batch';
