/**
 * kubeadm's ConfigMaps in the cluster, which `kubeadm upgrade` and `kubeadm join` write node files from:
 * - kube-system/kubeadm-config, the ClusterConfiguration: read for the snapshot, and changed like the
 *   manifests once the control plane has moved, or the next `kubeadm upgrade` would regenerate the
 *   manifests with the in-tree flags;
 * - kube-system/kubelet-config, the cluster's KubeletConfiguration: the in-tree gates leave its
 *   featureGates like the node's config file, or `kubeadm upgrade node` would write them back (and from
 *   1.31 a kubelet told DisableCloudProviders=false does not start).
 * A cluster without them (not made by kubeadm) is left alone.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  type ClusterConfigurationEdit,
  editClusterConfiguration,
  KUBEADM_CONFIG,
  type Reverted,
  revertClusterConfiguration,
} from '../controlplane/kubeadm-config.ts';
import {
  editKubeletSources,
  KUBELET_CONFIG_FILE,
  type KubeletChanges,
} from '../controlplane/kubelet-sources.ts';
import { retryOnConflict } from '../kube/conflicts.ts';
import { call, orNotFound } from '../kube/errors.ts';
import type { ClusterAccess } from './cluster.ts';
import type { StepContext } from './context.ts';

/** One text of a ConfigMap, by its key. */
interface ConfigMapText {
  readonly namespace: string;
  readonly name: string;
  readonly key: string;
}

export const KUBELET_CONFIG_MAP: ConfigMapText = {
  namespace: 'kube-system',
  name: 'kubelet-config',
  key: 'kubelet',
};

async function readConfigMap(ctx: ClusterAccess, ref: ConfigMapText): Promise<V1ConfigMap | undefined> {
  return orNotFound(
    call(`read ${ref.namespace}/${ref.name}`, () =>
      ctx.clients.core.readNamespacedConfigMap({ name: ref.name, namespace: ref.namespace }),
    ),
  );
}

/** The text, or undefined when the cluster has no such ConfigMap or key. */
async function readText(ctx: ClusterAccess, ref: ConfigMapText): Promise<string | undefined> {
  return (await readConfigMap(ctx, ref))?.data?.[ref.key];
}

/** What writing kubeadm's ConfigMaps takes: the cluster, and the invocation's deadline for conflict retries. */
type ConfigWriter = Pick<StepContext, 'clients' | 'deadline'>;

/**
 * Replace the text with `change(text)`; whether it changed. The replace carries the resourceVersion read:
 * a concurrent change is a 409, and the change is made again on what is there now (retryOnConflict),
 * never written over it.
 */
function updateText(
  ctx: ConfigWriter,
  ref: ConfigMapText,
  change: (text: string) => string,
): Promise<boolean> {
  return retryOnConflict(async () => {
    const cm = await readConfigMap(ctx, ref);
    const text = cm?.data?.[ref.key];
    if (!cm || text === undefined) return false;
    const next = change(text);
    if (next === text) return false;
    await call(`update ${ref.namespace}/${ref.name}`, () =>
      ctx.clients.core.replaceNamespacedConfigMap({
        name: ref.name,
        namespace: ref.namespace,
        body: { ...cm, data: { ...cm.data, [ref.key]: next } },
      }),
    );
    return true;
  }, ctx);
}

/** The ClusterConfiguration text, or undefined when the cluster has no kubeadm-config. */
export function readClusterConfiguration(ctx: ClusterAccess): Promise<string | undefined> {
  return readText(ctx, KUBEADM_CONFIG);
}

/** Apply `edit` to the ClusterConfiguration; whether it changed. */
export function editKubeadmConfig(ctx: ConfigWriter, edit: ClusterConfigurationEdit): Promise<boolean> {
  return updateText(ctx, KUBEADM_CONFIG, (text) => editClusterConfiguration(text, edit).text);
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
  await updateText(ctx, KUBEADM_CONFIG, (text) => {
    const back = revertClusterConfiguration(text, original, edit);
    how = back.how;
    return back.text;
  });
  return how;
}

/** The cluster's KubeletConfiguration text, or undefined when it has no kubelet-config. */
export function readKubeletConfiguration(ctx: ClusterAccess): Promise<string | undefined> {
  return readText(ctx, KUBELET_CONFIG_MAP);
}

/** A KubeletConfiguration text with `changes` made to its featureGates, every other byte kept. */
function editGates(text: string, changes: KubeletChanges): string {
  return editKubeletSources({ [KUBELET_CONFIG_FILE]: text }, changes)[KUBELET_CONFIG_FILE]?.text ?? text;
}

/** Make the node kubelet's gate changes in the cluster's KubeletConfiguration; whether it changed. */
export function editKubeletConfigMap(ctx: ConfigWriter, changes: KubeletChanges): Promise<boolean> {
  return updateText(ctx, KUBELET_CONFIG_MAP, (text) =>
    editGates(text, { featureGates: changes.featureGates }),
  );
}

/**
 * Take back editKubeletConfigMap: the original text while the ConfigMap still holds exactly what the run
 * made of it; 'left' when it was changed since (the operator's text is kept, and the run says so).
 */
export async function revertKubeletConfigMap(
  ctx: ConfigWriter,
  original: string,
  changes: KubeletChanges,
): Promise<'restored' | 'unchanged' | 'left'> {
  let how: 'restored' | 'unchanged' | 'left' = 'unchanged';
  await updateText(ctx, KUBELET_CONFIG_MAP, (text) => {
    if (text === original) how = 'unchanged';
    else how = text === editGates(original, { featureGates: changes.featureGates }) ? 'restored' : 'left';
    return how === 'restored' ? original : text;
  });
  return how;
}
