/**
 * Steps 2 and 4: the CCM is staged (every object applied, the workload at zero replicas) before the control
 * plane moves, and started only once no kube-controller-manager runs the in-tree cloud loops, so the cluster
 * never has two cloud controllers (ADR 0002). Both are server-side applies of the same rendered objects:
 * run twice, they change nothing.
 */
import type { KubernetesObject, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { parseFlags } from '../controlplane/flags.ts';
import { applyObjects } from '../kube/apply.ts';
import { call, httpStatus } from '../kube/errors.ts';
import { waitFor } from '../kube/wait.ts';
import { providerFacts } from '../providers/catalog.ts';
import { renderCcmObjects } from '../providers/render.ts';
import { commandLine, isPodReady, readMirrorPod } from './cluster.ts';
import type { StepContext } from './context.ts';
import { KCM_MANIFEST, TO_EXTERNAL_KUBEADM } from './edits.ts';
import { editKubeadmConfig } from './kubeadm-config.ts';
import type { RunIds } from './schemas.ts';
import type { Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';

function isDeployment(obj: KubernetesObject): obj is V1Deployment {
  return obj.kind === 'Deployment';
}

export function ccmDeploymentOf(objects: readonly KubernetesObject[]): V1Deployment {
  const deployment = objects.find(isDeployment);
  if (!deployment?.metadata?.name) throw new Error('the provider manifests have no Deployment');
  return deployment;
}

async function currentReplicas(ctx: StepContext, d: V1Deployment): Promise<number | undefined> {
  const name = d.metadata?.name as string;
  const namespace = d.metadata?.namespace ?? 'kube-system';
  try {
    const existing = await call(`read deployment ${name}`, () =>
      ctx.clients.apps.readNamespacedDeployment({ name, namespace }),
    );
    return existing.spec?.replicas;
  } catch (err) {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  }
}

/** The CCM's objects for this cluster, as the provider catalog renders them. */
export function renderCcm(snapshot: Snapshot, replicas: number): KubernetesObject[] {
  const cloudConfig = inTreeCloudConfigPath(snapshot);
  return renderCcmObjects({
    provider: snapshot.provider,
    kubernetesVersion: snapshot.kubernetesVersion,
    clusterName: snapshot.clusterName,
    replicas,
    ...(cloudConfig ? { cloudConfigHostPath: cloudConfig } : {}),
  }) as KubernetesObject[];
}

/** kube-controller-manager's --cloud-config before the migration: the CCM mounts that file from its node. */
export function inTreeCloudConfigPath(snapshot: Pick<Snapshot, 'files'>): string | undefined {
  for (const reports of Object.values(snapshot.files)) {
    const kcm = reports.find((f) => f.path === KCM_MANIFEST);
    const path = kcm?.flags?.['cloud-config'];
    if (path) return path;
  }
  return undefined;
}

export async function stageCcm(event: RunIds, ctx: StepContext): Promise<{ changed: number }> {
  const snapshot = await loadSnapshot(ctx, event);
  // Staging again (a resumed run) must not scale a started CCM back to zero: keep the replicas it has.
  const replicas = (await currentReplicas(ctx, ccmDeploymentOf(renderCcm(snapshot, 0)))) ?? 0;
  const applied = await applyObjects(ctx.clients, renderCcm(snapshot, replicas));
  const changed = applied.filter((a) => a.changed).length;
  ctx.progress({
    step: 'stage-ccm',
    message: `${applied.length} objects applied, ${changed} changed, CCM at ${replicas} replicas`,
  });
  return { changed };
}

/** Control-plane nodes whose kube-controller-manager still runs (or may still run) the in-tree cloud loops. */
async function inTreeControllerManagers(ctx: StepContext, snapshot: Snapshot): Promise<string[]> {
  const inTree = providerFacts(snapshot.provider).inTreeName;
  const nodes = Object.entries(snapshot.nodes)
    .filter(([, n]) => n.role === 'control-plane')
    .map(([name]) => name);
  const still: string[] = [];
  for (const node of nodes) {
    const pod = await readMirrorPod(ctx, 'kube-controller-manager', node);
    const provider = pod && parseFlags(commandLine(pod)).get('cloud-provider');
    if (!pod || !isPodReady(pod) || provider === inTree) still.push(node);
  }
  return still;
}

/** The pods of the CCM's Deployment (its selector), whatever their state. */
export async function ccmPods(ctx: StepContext, snapshot: Snapshot): Promise<V1Pod[]> {
  const deployment = ccmDeploymentOf(renderCcm(snapshot, 0));
  const selector = Object.entries(deployment.spec?.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const namespace = deployment.metadata?.namespace ?? 'kube-system';
  const pods = await call('list CCM pods', () =>
    ctx.clients.core.listNamespacedPod({ namespace, labelSelector: selector }),
  );
  return pods.items;
}

/**
 * The CCM's leader, when a Ready CCM pod holds the provider's Lease. Leader election identities are
 * `<hostname>_<uuid>`, and the CCM runs on the host network: its hostname is its node's name.
 */
export async function ccmLeader(ctx: StepContext, snapshot: Snapshot): Promise<string | undefined> {
  const facts = providerFacts(snapshot.provider);
  const [pods, lease] = await Promise.all([
    ccmPods(ctx, snapshot),
    call('read the CCM lease', () =>
      ctx.clients.coordination.readNamespacedLease({ name: facts.leaseName, namespace: facts.namespace }),
    ).catch((err: unknown) => {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }),
  ]);
  const holder = lease?.spec?.holderIdentity ?? '';
  const leader = pods.find((p) => isPodReady(p) && holder.startsWith(`${p.spec?.nodeName}_`));
  return leader?.metadata?.name;
}

export async function activateCcm(event: RunIds, ctx: StepContext): Promise<{ leader: string }> {
  const snapshot = await loadSnapshot(ctx, event);
  await waitFor(
    'every kube-controller-manager to run without the in-tree provider',
    async () => (await inTreeControllerManagers(ctx, snapshot)).length === 0,
    ctx,
  );
  if (await editKubeadmConfig(ctx, TO_EXTERNAL_KUBEADM)) {
    ctx.progress({ step: 'activate-ccm', message: 'kubeadm-config ClusterConfiguration updated' });
  }
  const applied = await applyObjects(ctx.clients, renderCcm(snapshot, snapshot.ccmReplicas));
  if (applied.some((a) => a.changed)) {
    ctx.progress({ step: 'activate-ccm', message: `CCM scaled to ${snapshot.ccmReplicas}` });
  }
  const leader = await waitFor('the CCM to be Ready and hold its lease', () => ccmLeader(ctx, snapshot), ctx);
  ctx.progress({ step: 'activate-ccm', message: `CCM leader ${leader}` });
  return { leader };
}
