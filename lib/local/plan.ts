/**
 * `ccm-migrate plan`: exactly what an upgrade would change, and no change. The node agent answers every
 * file edit as a dry run (a unified diff per file), and the CCM's objects go through a server-side apply
 * dry run (a diff per object against what the cluster holds), as a Deployment or, when asked, a DaemonSet. What it leaves behind: the agent's Jobs are
 * deleted once read; the agent's code ConfigMap stays (inert, reused by the upgrade).
 */
import { type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import { createTwoFilesPatch } from 'diff';
import { stringify } from 'yaml';
import { describeAgentImage } from '../kube/agent-job.ts';
import { describeObject, FIELD_MANAGER } from '../kube/apply.ts';
import type { KubeClients } from '../kube/clients.ts';
import { call, orNotFound } from '../kube/errors.ts';
import { providerFacts } from '../providers/catalog.ts';
import { PLUGIN_CONFIG_PATH } from '../providers/image-credentials.ts';
import { type ContainerImage, renderedImages } from '../providers/image-overrides.ts';
import { type AddressChange, addressChangesOf, expectedAddresses } from '../steps/address-plan.ts';
import { type CcmSource, inTreeCloudConfigPath, renderCcm } from '../steps/ccm.ts';
import { deployedCcm } from '../steps/deployed-ccm.ts';
import { toExternalKubelet, toExternalStaticPods } from '../steps/edits.ts';
import { pluginRequired } from '../steps/image-credentials.ts';
import {
  type ClusterExamination,
  ccmName,
  ccmSnapshotFields,
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
  /** The node agent's image, as describeAgentImage words it. */
  readonly agentImage: string;
  readonly files: FileChange[];
  readonly objects: ObjectChange[];
  /** The nodes whose addresses the CCM would change, as preflight predicts them. */
  readonly addresses: AddressChange[];
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
  const existing = await orNotFound(call(`read ${what}`, () => clients.objects.read(obj as never)));
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

/**
 * What stands for a file's diff the agent does not send: its answer must fit 4 KiB, so the credential
 * plugin's config (ccm-migrate's own text, README's step 5) is named rather than shown.
 */
function noDiff(path: string, exam: ClusterExamination): string {
  if (path !== PLUGIN_CONFIG_PATH) return '(diff not available)';
  return `(new: the CredentialProviderConfig naming ${exam.imageCredentials.plugin}, which the kubelet is pointed at)`;
}

export async function planUpgrade(opts: PlanOptions): Promise<UpgradePlan> {
  const runId = newRunId('plan');
  // No agent pre-started: that would create the agents' ServiceAccount and Role, and plan changes nothing.
  const { prestartAgent: _, ...ctx } = localContext(opts);
  const exam = await examineCluster(ctx, runId, opts.options);
  const expected = expectedAddresses(exam.predictedAddresses, ccmName(exam.provider));
  const { nodes: _nodes, files: _files, cloudConfigCopies, ...examination } = exam;
  const files: FileChange[] = [];
  for (const node of [...examination.controlPlaneNodes, ...examination.workerNodes]) {
    const controlPlane = examination.controlPlaneNodes.includes(node);
    const result = await ctx.agent(node, {
      op: 'set-flags',
      runId,
      dryRun: true,
      staticPods: controlPlane ? toExternalStaticPods(exam) : [],
      kubelet: toExternalKubelet(
        { ...exam, imageCredentialsRequired: pluginRequired(exam.imageCredentials) },
        node,
      ),
    });
    for (const f of result.files) {
      if (f.changed) files.push({ node, path: f.path, diff: f.diff ?? noDiff(f.path, exam) });
    }
  }
  // The copy stage-ccm writes for the CCM, as preflight's dry run found it; shown without its text.
  for (const copy of cloudConfigCopies ?? []) {
    const diff = `(the CCM's copy of ${examination.cloudConfigTranslation?.source}, translated: not shown, it can hold credentials)`;
    files.push({ node: copy.node, path: copy.path, diff });
  }
  const objects: ObjectChange[] = [];
  // As the upgrade renders them, from the fields its preflight would record, at the replicas activate-ccm
  // starts them with (stage-ccm applies them at zero first). Once migrated, kube-controller-manager no
  // longer names the cloud config: the deployed CCM does.
  const fields = ccmSnapshotFields(exam, opts.options);
  const source: CcmSource =
    inTreeCloudConfigPath(fields) === undefined
      ? { ...fields, ...(await deployedCcm(opts.clients, fields)) }
      : fields;
  const rendered = renderCcm(source, fields.ccmReplicas);
  for (const obj of rendered) objects.push(await objectChange(opts.clients, obj));
  const leaderMigration = leaderMigrationFor(examination, opts.options.leaderMigration);
  const images = renderedImages(rendered, opts.options.images);
  return {
    examination,
    action: actionOf(examination),
    leaderMigration,
    images,
    agentImage: describeAgentImage(opts.agentImage),
    files,
    objects,
    addresses: addressChangesOf(exam.nodes, expected),
  };
}

function actionOf(e: Omit<ClusterExamination, 'nodes' | 'files'>): string {
  const install = installNote(e);
  if (install) return install;
  if (e.inTreeLeft.length === 0) return 'the cluster is already external: an upgrade would only verify it';
  const { displayName, inTreeName } = providerFacts(e.provider);
  return `move the cloud controllers from the in-tree ${inTreeName} provider to the ${displayName} cloud-controller-manager, which runs without its cloud-node-lifecycle controller (it deletes Nodes it cannot find) until it has initialised every node again, ${e.controlPlaneNodes.length + e.workerNodes.length} in all`;
}
