/** Well-known Kubernetes names the product and the twin both depend on (k8s.io/cloud-provider/api). */

/** Set by a kubelet running with --cloud-provider=external; removed by the CCM once it initialised the node. */
export const UNINITIALIZED_TAINT = 'node.cloudprovider.kubernetes.io/uninitialized';

/** `k1=v1,k2=v2`: the equality label selector that matches objects carrying all of `labels`. */
export function labelSelectorOf(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
