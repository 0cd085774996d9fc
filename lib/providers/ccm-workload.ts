/**
 * How the CCM runs: a Deployment with leader election (the default: staged at zero replicas), or on request
 * a DaemonSet on every control-plane node, as upstream's AWS and OpenStack manifests run it. Apart from
 * render.ts so that the input schemas naming it do not bundle the YAML parser into every function.
 */
export const CCM_WORKLOADS = ['deployment', 'daemonset'] as const;
export type CcmWorkload = (typeof CCM_WORKLOADS)[number];
