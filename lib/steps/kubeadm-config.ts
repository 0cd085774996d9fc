/**
 * kubeadm's ClusterConfiguration in the cluster (kube-system/kubeadm-config): read for the snapshot, and
 * changed like the manifests once the control plane has moved, or the next `kubeadm upgrade` would
 * regenerate the manifests with the in-tree flags. A cluster without it (not made by kubeadm) is left alone.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  type ClusterConfigurationEdit,
  editClusterConfiguration,
  KUBEADM_CONFIG,
  type Reverted,
  revertClusterConfiguration,
} from '../controlplane/kubeadm-config.ts';
import { retryOnConflict } from '../kube/conflicts.ts';
import { call, orNotFound } from '../kube/errors.ts';
import type { ClusterAccess } from './cluster.ts';
import type { StepContext } from './context.ts';

async function readKubeadmConfigMap(ctx: ClusterAccess): Promise<V1ConfigMap | undefined> {
  return orNotFound(
    call(`read ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}`, () =>
      ctx.clients.core.readNamespacedConfigMap({
        name: KUBEADM_CONFIG.name,
        namespace: KUBEADM_CONFIG.namespace,
      }),
    ),
  );
}

/** The ClusterConfiguration text, or undefined when the cluster has no kubeadm-config. */
export async function readClusterConfiguration(ctx: ClusterAccess): Promise<string | undefined> {
  return (await readKubeadmConfigMap(ctx))?.data?.[KUBEADM_CONFIG.key];
}

/** What writing kubeadm-config takes: the cluster, and the invocation's deadline for conflict retries. */
type ConfigWriter = Pick<StepContext, 'clients' | 'deadline'>;

/**
 * Replace the ClusterConfiguration with `change(text)`; whether it changed. The replace carries the
 * resourceVersion read: a concurrent change is a 409, and the change is made again on what is there now
 * (retryOnConflict), never written over it.
 */
export function updateClusterConfiguration(
  ctx: ConfigWriter,
  change: (text: string) => string,
): Promise<boolean> {
  return retryOnConflict(async () => {
    const cm = await readKubeadmConfigMap(ctx);
    const text = cm?.data?.[KUBEADM_CONFIG.key];
    if (!cm || text === undefined) return false;
    const next = change(text);
    if (next === text) return false;
    await call(`update ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}`, () =>
      ctx.clients.core.replaceNamespacedConfigMap({
        name: KUBEADM_CONFIG.name,
        namespace: KUBEADM_CONFIG.namespace,
        body: { ...cm, data: { ...cm.data, [KUBEADM_CONFIG.key]: next } },
      }),
    );
    return true;
  }, ctx);
}

/** Apply `edit` to the ClusterConfiguration; whether it changed. */
export function editKubeadmConfig(ctx: ConfigWriter, edit: ClusterConfigurationEdit): Promise<boolean> {
  return updateClusterConfiguration(ctx, (text) => editClusterConfiguration(text, edit).text);
}

/**
 * Take back a run's `edit` of the ClusterConfiguration whose text before the run was `original` (see
 * revertClusterConfiguration); how it went, 'unchanged' also when the cluster has no kubeadm-config.
 */
export async function revertKubeadmConfig(
  ctx: ConfigWriter,
  original: string,
  edit: ClusterConfigurationEdit,
): Promise<Reverted> {
  let how: Reverted = 'unchanged';
  await updateClusterConfiguration(ctx, (text) => {
    const back = revertClusterConfiguration(text, original, edit);
    how = back.how;
    return back.text;
  });
  return how;
}
