/**
 * `ccm-migrate plan`: exactly what an upgrade would change, and no change. The node agent answers every
 * file edit as a dry run (a unified diff per file), and the CCM's objects go through a server-side apply
 * dry run (a diff per object against what the cluster holds), as a Deployment or, when asked, a DaemonSet. What it leaves behind: the agent's Jobs are
 * deleted once read; the agent's code ConfigMap stays (inert, reused by the upgrade).
 */
import {
  type KubernetesObject,
  PatchStrategy,
  type V1DaemonSet,
  type V1Deployment,
} from '@kubernetes/client-node';
import { createTwoFilesPatch } from 'diff';
import { stringify } from 'yaml';
import { parseFlags } from '../controlplane/flags.ts';
import { describeObject, FIELD_MANAGER } from '../kube/apply.ts';
import type { KubeClients } from '../kube/clients.ts';
import { call, httpStatus } from '../kube/errors.ts';
import { providerFacts } from '../providers/catalog.ts';
import type { CcmWorkload } from '../providers/ccm-workload.ts';
import { type ContainerImage, renderedImages } from '../providers/image-overrides.ts';
import { ccmDeploymentRef, renderCcmObjects } from '../providers/render.ts';
import { inTreeCloudConfigPath } from '../steps/ccm.ts';
import { TO_EXTERNAL_KUBELET, TO_EXTERNAL_STATIC_PODS } from '../steps/edits.ts';
import {
  type ClusterExamination,
  examineCluster,
  installNote,
  leaderMigrationFor,
} from '../steps/preflight.ts';
import type { LeaderMigrationDecision, UpgradeOptions } from '../steps/schemas.ts';
import { type LocalContextOptions, localContext } from './context.ts';
import { newRunId } from './migration.ts';

export interface FileChange {
  readonly node: string;
  readonly path: string;
  readonly diff: string;
}

export interface ObjectChange {
  readonly object: string;
  readonly action: 'create' | 'update' | 'unchanged';
  readonly diff?: string;
}

export interface UpgradePlan {
  readonly examination: Omit<ClusterExamination, 'nodes' | 'files'>;
  /** What the upgrade would do, in words: move off the in-tree provider, install the CCM, or only verify. */
  readonly action: string;
  /** Whether the cloud controllers would be handed over under the leader-migration lease, and why. */
  readonly leaderMigration: LeaderMigrationDecision;
  /** The image each CCM container would run: the catalog's, or the operator's override. */
  readonly images: ContainerImage[];
  readonly files: FileChange[];
  readonly objects: ObjectChange[];
}

export interface PlanOptions extends LocalContextOptions {
  readonly options: UpgradeOptions;
}

/** The fields the API server owns: not part of what an apply changes. */
function comparable(obj: KubernetesObject | undefined): string {
  if (!obj) return '';
  const { managedFields, resourceVersion, generation, uid, creationTimestamp, ...metadata } =
    obj.metadata ?? {};
  const { status, ...rest } = obj as KubernetesObject & { status?: unknown };
  return stringify({ ...rest, metadata });
}

async function objectChange(clients: KubeClients, obj: KubernetesObject): Promise<ObjectChange> {
  const what = describeObject(obj);
  const existing = await call(`read ${what}`, () => clients.objects.read(obj as never)).catch(
    (err: unknown) => {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    },
  );
  const after = await call(`dry-run apply ${what}`, () =>
    clients.objects.patch(obj, undefined, 'All', FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
  );
  const [before, next] = [comparable(existing), comparable(after)];
  if (before === next) return { object: what, action: 'unchanged' };
  return {
    object: what,
    action: existing ? 'update' : 'create',
    diff: createTwoFilesPatch(what, what, before, next, '', '', { context: 2 }),
  };
}

async function deployedCloudConfig(
  clients: KubeClients,
  provider: string,
  workload: CcmWorkload,
): Promise<string | undefined> {
  const { namespace, name } = ccmDeploymentRef(provider);
  const kind = workload === 'daemonset' ? 'DaemonSet' : 'Deployment';
  const ref = { apiVersion: 'apps/v1', kind, metadata: { name, namespace } };
  const deployed = await call(
    `read ${kind} ${name}`,
    async () => (await clients.objects.read(ref)) as V1Deployment | V1DaemonSet,
  ).catch((err: unknown) => {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  });
  const args = deployed?.spec?.template.spec?.containers.flatMap((c) => c.args ?? []) ?? [];
  return parseFlags(args).get('cloud-config');
}

export async function planUpgrade(opts: PlanOptions): Promise<UpgradePlan> {
  const runId = newRunId('plan');
  const ctx = localContext(opts);
  const { nodes, files: inspected, ...examination } = await examineCluster(ctx, runId, opts.options);
  const files: FileChange[] = [];
  for (const node of [...examination.controlPlaneNodes, ...examination.workerNodes]) {
    const controlPlane = examination.controlPlaneNodes.includes(node);
    const result = await ctx.agent(node, {
      op: 'set-flags',
      runId,
      dryRun: true,
      staticPods: controlPlane ? [...TO_EXTERNAL_STATIC_PODS] : [],
      kubelet: TO_EXTERNAL_KUBELET,
    });
    for (const f of result.files) {
      if (f.changed) files.push({ node, path: f.path, diff: f.diff ?? '(diff not available)' });
    }
  }
  const objects: ObjectChange[] = [];
  const workload = opts.options.ccmWorkload ?? 'deployment';
  // Once migrated, kube-controller-manager no longer names the file: the deployed CCM does. A provider
  // never in-tree keeps it where the catalog says (preflight found it there).
  const cloudConfig =
    inTreeCloudConfigPath({ files: inspected }) ??
    (await deployedCloudConfig(opts.clients, examination.provider, workload)) ??
    providerFacts(examination.provider).cloudConfigHostPath;
  const rendered = renderCcmObjects({
    provider: examination.provider,
    kubernetesVersion: examination.kubernetesVersion,
    clusterName: examination.clusterName,
    replicas: opts.options.ccmReplicas ?? Math.min(examination.controlPlaneNodes.length, 3),
    ...(cloudConfig ? { cloudConfigHostPath: cloudConfig } : {}),
    ...(opts.options.images ? { images: opts.options.images } : {}),
    workload,
  }) as KubernetesObject[];
  for (const obj of rendered) objects.push(await objectChange(opts.clients, obj));
  const leaderMigration = leaderMigrationFor(
    examination.provider,
    examination.kubernetesVersion,
    examination.controlPlaneNodes.length,
    opts.options.leaderMigration,
  );
  const images = renderedImages(rendered, opts.options.images);
  return { examination, action: actionOf(examination), leaderMigration, images, files, objects };
}

function actionOf(e: Omit<ClusterExamination, 'nodes' | 'files'>): string {
  const install = installNote(e);
  if (install) return install;
  if (e.inTreeLeft.length === 0) return 'the cluster is already external: an upgrade would only verify it';
  const { displayName, inTreeName } = providerFacts(e.provider);
  return `move the cloud controllers from the in-tree ${inTreeName} provider to the ${displayName} cloud-controller-manager`;
}
