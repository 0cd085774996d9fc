/**
 * kubeadm's ClusterConfiguration in the cluster (kube-system/kubeadm-config): read for the snapshot, and
 * changed like the manifests once the control plane has moved, or the next `kubeadm upgrade` would
 * regenerate the manifests with the in-tree flags. A cluster without it (not made by kubeadm) is left alone.
 */
import {
  type ClusterConfigurationEdit,
  editClusterConfiguration,
  KUBEADM_CONFIG,
} from '../controlplane/kubeadm-config.ts';
import { call, httpStatus } from '../kube/errors.ts';
import type { ClusterAccess } from './cluster.ts';

/** The ClusterConfiguration text, or undefined when the cluster has no kubeadm-config. */
export async function readClusterConfiguration(ctx: ClusterAccess): Promise<string | undefined> {
  try {
    const cm = await call(`read ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}`, () =>
      ctx.clients.core.readNamespacedConfigMap({
        name: KUBEADM_CONFIG.name,
        namespace: KUBEADM_CONFIG.namespace,
      }),
    );
    return cm.data?.[KUBEADM_CONFIG.key];
  } catch (err) {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  }
}

/** Apply `edit` to the ClusterConfiguration; whether it changed. A concurrent writer makes it retry (409). */
export async function editKubeadmConfig(
  ctx: ClusterAccess,
  edit: ClusterConfigurationEdit,
): Promise<boolean> {
  const what = `update ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}`;
  const cm = await call(what, () =>
    ctx.clients.core.readNamespacedConfigMap({
      name: KUBEADM_CONFIG.name,
      namespace: KUBEADM_CONFIG.namespace,
    }),
  ).catch((err: unknown) => {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  });
  const text = cm?.data?.[KUBEADM_CONFIG.key];
  if (!cm || text === undefined) return false;
  const next = editClusterConfiguration(text, edit);
  if (!next.changed) return false;
  // replace carries the resourceVersion we read: a concurrent change is a 409, never overwritten.
  await call(what, () =>
    ctx.clients.core.replaceNamespacedConfigMap({
      name: KUBEADM_CONFIG.name,
      namespace: KUBEADM_CONFIG.namespace,
      body: { ...cm, data: { ...cm.data, [KUBEADM_CONFIG.key]: next.text } },
    }),
  );
  return true;
}
