/**
 * Steps 2 and 4: the CCM is staged (every object applied, the workload at zero replicas, or a DaemonSet
 * selecting no node) before the control plane moves, and started only once no kube-controller-manager runs
 * the in-tree cloud loops, so the cluster never has two cloud controllers (ADR 0002). Both are server-side
 * applies of the same rendered objects: run twice, they change nothing.
 */
import type { KubernetesObject, V1DaemonSet, V1Deployment, V1Lease, V1Pod } from '@kubernetes/client-node';
import { OPENSTACK_CREDENTIALS_DIR } from '../controlplane/openstack-cloud-config.ts';
import { AgentFailedError } from '../errors.ts';
import { removeGoSignals } from '../kube/agent-account.ts';
import { applyObjects } from '../kube/apply.ts';
import { call, orNotFound } from '../kube/errors.ts';
import { waitFor, wakeOnObject } from '../kube/wait.ts';
import { providerFacts } from '../providers/catalog.ts';
import { describeImage, renderedImages } from '../providers/image-overrides.ts';
import {
  CCM_LABEL_SELECTOR,
  CCM_LABELS,
  ccmDeploymentRef,
  isStagedCcm,
  renderCcmObjects,
  runsNodeLifecycle,
} from '../providers/render.ts';
import { isPodReady } from './cluster.ts';
import type { StepContext } from './context.ts';
import { cloudProviderOf, controllerManagersNot, controlPlaneOf } from './controller-managers.ts';
import { KCM_MANIFEST, TO_EXTERNAL_KUBELET, toExternalKubeadm } from './edits.ts';
import { editKubeadmConfig, editKubeletConfigMap } from './kubeadm-config.ts';
import { runsLeaderMigration, withLeaderMigration } from './leader-migration.ts';
import { flipRequest } from './nodes.ts';
import { besidePrestart, prestartFirst } from './prestart.ts';
import type { ActivateEvent, RunIds } from './schemas.ts';
import type { Snapshot } from './snapshot.ts';
import { loadSnapshot } from './snapshot-store.ts';

export type CcmWorkloadObject = V1Deployment | V1DaemonSet;

/** The CCM's own workload among its rendered objects (not Azure's cloud-node-manager DaemonSet). */
export function ccmWorkloadOf(objects: readonly KubernetesObject[]): CcmWorkloadObject {
  const component = CCM_LABELS['app.kubernetes.io/component'];
  const workload = objects.find(
    (o) =>
      (o.kind === 'Deployment' || o.kind === 'DaemonSet') &&
      o.metadata?.labels?.['app.kubernetes.io/component'] === component,
  );
  if (!workload?.metadata?.name) throw new Error('the provider manifests have no CCM workload');
  return workload as CcmWorkloadObject;
}

/** How the CCM's pods run: under the migration lease or not, with or without the node-lifecycle controller. */
export interface CcmMode {
  readonly leaderMigration: boolean;
  readonly nodeLifecycle: boolean;
}

/**
 * What a deployed CCM runs with now: its replicas (a started DaemonSet: the run's, as it renders them),
 * and its mode.
 */
async function currentState(
  ctx: StepContext,
  snapshot: Snapshot,
  workload: CcmWorkloadObject,
): Promise<({ replicas: number | undefined } & CcmMode) | undefined> {
  const existing = (await orNotFound(
    call(`read ${workload.kind} ${workload.metadata?.name}`, () =>
      ctx.clients.objects.read(workload as never),
    ),
  )) as CcmWorkloadObject | undefined;
  if (!existing) return undefined;
  const spec = existing.spec as (V1Deployment['spec'] & V1DaemonSet['spec']) | undefined;
  const staged = isStagedCcm(workload.kind, spec);
  const pod = { spec: spec?.template.spec } as V1Pod;
  return {
    replicas: staged ? 0 : workload.kind === 'DaemonSet' ? snapshot.ccmReplicas : spec?.replicas,
    leaderMigration: runsLeaderMigration(pod),
    nodeLifecycle: runsNodeLifecycle(ccmCommandLine(pod)),
  };
}

/** The CCM container's command line in a CCM pod (or its workload's template). */
function ccmCommandLine(pod: V1Pod): string[] {
  const c = pod.spec?.containers.find((x) => x.name === 'cloud-controller-manager');
  return [...(c?.command ?? []), ...(c?.args ?? [])];
}

/**
 * What the CCM's render reads of a snapshot: `plan` gives the same fields of its examination. Of a
 * translation, only the copy and the Secret the CCM mounts (plan, on a migrated cluster: what its CCM mounts).
 */
export type CcmSource = Pick<
  Snapshot,
  | 'provider'
  | 'kubernetesVersion'
  | 'clusterName'
  | 'files'
  | 'images'
  | 'ccmWorkload'
  | 'nodeNetwork'
  | 'deployedCloudConfig'
> & {
  readonly cloudConfigTranslation?:
    | Pick<NonNullable<Snapshot['cloudConfigTranslation']>, 'target' | 'credentialsSecret'>
    | undefined;
};

/**
 * The CCM's objects for this cluster, as the provider catalog renders them with the images the snapshot
 * recorded, in a mode (absent: without leader migration, with every controller).
 */
export function renderCcm(
  snapshot: CcmSource,
  replicas: number,
  mode: Partial<CcmMode> = {},
): KubernetesObject[] {
  const translation = snapshot.cloudConfigTranslation;
  // A provider never in-tree (IBM) has no --cloud-config to carry over: the catalog says where its file is.
  const cloudConfig =
    translation?.target ??
    inTreeCloudConfigPath(snapshot) ??
    snapshot.deployedCloudConfig ??
    providerFacts(snapshot.provider).cloudConfigHostPath;
  const objects = renderCcmObjects({
    provider: snapshot.provider,
    kubernetesVersion: snapshot.kubernetesVersion,
    clusterName: snapshot.clusterName,
    replicas,
    ...(cloudConfig ? { cloudConfigHostPath: cloudConfig } : {}),
    ...(translation
      ? {
          credentialsSecret: {
            name: translation.credentialsSecret.name,
            mountPath: OPENSTACK_CREDENTIALS_DIR,
          },
        }
      : {}),
    ...(snapshot.images ? { images: snapshot.images } : {}),
    ...(snapshot.ccmWorkload ? { workload: snapshot.ccmWorkload } : {}),
    ...(snapshot.nodeNetwork ? { nodeNetwork: snapshot.nodeNetwork } : {}),
    nodeLifecycle: mode.nodeLifecycle ?? true,
  }) as KubernetesObject[];
  return mode.leaderMigration ? withLeaderMigration(objects, true) : objects;
}

/**
 * kube-controller-manager's --cloud-config before the migration: the CCM mounts that file from its node (or,
 * when preflight recorded a translation, the copy written next to it).
 */
export function inTreeCloudConfigPath(snapshot: Pick<Snapshot, 'files'>): string | undefined {
  for (const reports of Object.values(snapshot.files)) {
    const kcm = reports.find((f) => f.path === KCM_MANIFEST);
    const path = kcm?.flags?.['cloud-config'];
    if (path) return path;
  }
  return undefined;
}

/**
 * The CCM's copy of the in-tree cloud config on every control-plane node (where its pods may run and mount
 * it), when preflight found one needed. The agent writes it (again, on a resumed run, only if it differs).
 */
async function writeTranslatedCloudConfig(
  ctx: StepContext,
  snapshot: Snapshot,
  runId: string,
): Promise<void> {
  const translation = snapshot.cloudConfigTranslation;
  if (translation === undefined) return;
  for (const node of controlPlaneOf(snapshot)) {
    const result = await ctx.agent(node, {
      op: 'translate-cloud-config',
      runId,
      provider: 'openstack',
      source: translation.source,
      target: translation.target,
    });
    const { name, namespace } = translation.credentialsSecret;
    if (result.credentialsSecret?.name !== name || result.credentialsSecret.namespace !== namespace) {
      throw new AgentFailedError(
        `${node}:${translation.source} no longer names the credentials Secret ${namespace}/${name} that preflight recorded`,
      );
    }
    ctx.progress({
      step: 'stage-ccm',
      node,
      message: `${translation.target} ${result.changed ? 'written' : 'already written'} for the CCM`,
    });
  }
}

export async function stageCcm(event: RunIds, ctx: StepContext): Promise<{ changed: number }> {
  const snapshot = await loadSnapshot(ctx, event);
  await writeTranslatedCloudConfig(ctx, snapshot, event.runId);
  // Staging again (a resumed run) must not scale a started CCM back to zero, nor take leader migration off
  // a CCM started beside in-tree kube-controller-managers: keep what it runs with. A new one is staged
  // without its node-lifecycle controller (verify-node's rule: no Node deleted before the CCM saw it).
  const current = await currentState(ctx, snapshot, ccmWorkloadOf(renderCcm(snapshot, 0)));
  const replicas = current?.replicas ?? 0;
  const objects = renderCcm(snapshot, replicas, current ?? { leaderMigration: false, nodeLifecycle: false });
  const applied = await applyObjects(ctx.clients, objects);
  const changed = applied.filter((a) => a.changed).length;
  const images = renderedImages(objects, snapshot.images).map(describeImage).join(', ');
  ctx.progress({
    step: 'stage-ccm',
    message: `${applied.length} objects applied, ${changed} changed, ${describeScale(snapshot, replicas)}; ${images}`,
  });
  return { changed };
}

/** The pods of the CCM's workload (its selector), whatever their state. */
export async function ccmPods(ctx: StepContext, snapshot: Snapshot): Promise<V1Pod[]> {
  // The labels render puts on every CCM pod, whatever its workload: no render on each look of a wait.
  const { namespace } = providerFacts(snapshot.provider);
  const pods = await call('list CCM pods', () =>
    ctx.clients.core.listNamespacedPod({ namespace, labelSelector: CCM_LABEL_SELECTOR }),
  );
  return pods.items;
}

/**
 * A poll that answers the CCM Lease's holder once a CCM leads: a CCM pod is Ready and the holder was seen
 * renewing the Lease (a process gone with its pod keeps it until it expires, renewing nothing).
 */
export function ccmLeaderPoll(ctx: StepContext, snapshot: Snapshot): () => Promise<string | undefined> {
  let seen: { holder: string; renewTime: string } | undefined;
  return async () => {
    const { leads, holder, renewTime } = await ccmLeadership(ctx, snapshot, await ccmPods(ctx, snapshot));
    const renewed = seen?.holder === holder && seen.renewTime !== renewTime;
    seen = { holder, renewTime };
    return leads && renewed ? holder : undefined;
  };
}

/** The CCM's Lease, or undefined before any CCM took it. */
async function readCcmLease(ctx: StepContext, snapshot: Snapshot): Promise<V1Lease | undefined> {
  const facts = providerFacts(snapshot.provider);
  return orNotFound(
    call('read the CCM lease', () =>
      ctx.clients.coordination.readNamespacedLease({ name: facts.leaseName, namespace: facts.namespace }),
    ),
  );
}

/**
 * Who holds the CCM's Lease, and whether a CCM may be leading: the Lease has a holder and one of `pods`
 * (the CCM's, listed by the caller) is Ready. Which pod holds it is not read from the holder's identity:
 * that is `<hostname>_<uuid>`, and a host-network pod's hostname is its host's, which need not be its
 * Node's name (AWS private DNS names, --hostname-override, capitals).
 */
async function ccmLeadership(
  ctx: StepContext,
  snapshot: Snapshot,
  pods: readonly V1Pod[],
): Promise<{ leads: boolean; holder: string; renewTime: string }> {
  const lease = await readCcmLease(ctx, snapshot);
  const holder = lease?.spec?.holderIdentity ?? '';
  return {
    leads: holder !== '' && pods.some((p) => isPodReady(p) && !p.metadata?.deletionTimestamp),
    holder,
    renewTime: String(lease?.spec?.renewTime ?? ''),
  };
}

/**
 * A poll that answers the CCM's leader once every CCM pod runs in the mode wanted and the holder was seen
 * renewing: after a rollout a process gone with its pod keeps the lease until it expires, and its hostname
 * is that of the new pod on the same node.
 */
function renewingCcmLeader(
  ctx: StepContext,
  snapshot: Snapshot,
  mode: CcmMode,
  /** No CCM held the lease before this step started one: any holder is one of its processes. */
  fresh: boolean,
): () => Promise<string | undefined> {
  let seen: { holder: string; renewTime: string } | undefined;
  return async () => {
    if (snapshot.ccmWorkload === 'daemonset' && !(await daemonSetRolledOut(ctx, snapshot))) return undefined;
    const pods = await ccmPods(ctx, snapshot);
    const other = (p: V1Pod): boolean =>
      runsLeaderMigration(p) !== mode.leaderMigration ||
      runsNodeLifecycle(ccmCommandLine(p)) !== mode.nodeLifecycle;
    if (pods.some(other)) return undefined;
    const { leads, holder, renewTime } = await ccmLeadership(ctx, snapshot, pods);
    const renewed = seen?.holder === holder && seen.renewTime !== renewTime;
    seen = { holder, renewTime };
    return leads && (fresh || renewed) ? holder : undefined;
  };
}

/**
 * Whether the CCM's DaemonSet runs a Ready pod of its current template on every node it selects (every
 * control-plane node), as `kubectl rollout status` reads it.
 */
async function daemonSetRolledOut(ctx: StepContext, snapshot: Snapshot): Promise<boolean> {
  // The DaemonSet carries the Deployment's name and namespace (render derives one from the other).
  const ds = await call('read the CCM DaemonSet', () =>
    ctx.clients.apps.readNamespacedDaemonSet(ccmDeploymentRef(snapshot.provider)),
  );
  const desired = ds.status?.desiredNumberScheduled ?? 0;
  return (
    (ds.status?.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 1) &&
    desired > 0 &&
    ds.status?.numberReady === desired &&
    ds.status?.updatedNumberScheduled === desired
  );
}

/** Whether the CCM's lease has no holder yet (a first start, not a rollout or a resumed run). */
async function ccmLeaseUnheld(ctx: StepContext, snapshot: Snapshot): Promise<boolean> {
  return !(await readCcmLease(ctx, snapshot))?.spec?.holderIdentity;
}

/** How the started CCM runs, for the progress output. */
function ccmStarted(snapshot: Snapshot): string {
  return snapshot.ccmWorkload === 'daemonset'
    ? 'CCM DaemonSet started on every control-plane node'
    : `CCM scaled to ${snapshot.ccmReplicas}`;
}

/** Where the staged CCM stands, for the progress output. */
function describeScale(snapshot: Snapshot, replicas: number): string {
  if (snapshot.ccmWorkload !== 'daemonset') return `CCM at ${replicas} replicas`;
  return replicas === 0 ? 'CCM DaemonSet on no node' : ccmStarted(snapshot);
}

/**
 * Apply the CCM at its replicas, in a mode, and wait until it leads (a holder seen renewing, unless no CCM
 * held the lease before). `started` names the change in the progress output.
 */
async function runCcm(
  ctx: StepContext,
  snapshot: Snapshot,
  mode: CcmMode,
  started: string,
): Promise<{ leader: string }> {
  const { leaderMigration } = mode;
  const fresh = await ccmLeaseUnheld(ctx, snapshot);
  const applied = await applyObjects(ctx.clients, renderCcm(snapshot, snapshot.ccmReplicas, mode));
  if (applied.some((a) => a.changed)) ctx.progress({ step: 'activate-ccm', message: started });
  const { leaseName, namespace } = providerFacts(snapshot.provider);
  const leader = await waitFor(
    `the CCM to be Ready${leaderMigration ? ' under leader migration' : ''} and hold its lease`,
    renewingCcmLeader(ctx, snapshot, mode, fresh),
    // Taking or renewing the lease is the last thing a starting CCM does: a change there is worth a look.
    {
      ...ctx,
      wakeOn: wakeOnObject(
        ctx.clients,
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
        leaseName,
      ),
    },
  );
  ctx.progress({
    step: 'activate-ccm',
    message: `CCM leader ${leader}${leaderMigration ? ', under the migration lease' : ''}`,
  });
  return { leader };
}

/**
 * Leader migration phase 2: the CCM starts beside in-tree kube-controller-managers that all run leader
 * migration, so that whichever holds the migration lease runs the cloud controllers, and only it. A
 * kube-controller-manager without the flag would run them beside the CCM: that is refused (waited for).
 */
async function startCcmMigrating(event: ActivateEvent, ctx: StepContext): Promise<{ leader: string }> {
  const snapshot = await loadSnapshot(ctx, event);
  await waitFor(
    'every kube-controller-manager to run with leader migration',
    async () => (await controllerManagersNot(ctx, snapshot, runsLeaderMigration)).length === 0,
    ctx,
  );
  return runCcm(
    ctx,
    snapshot,
    { leaderMigration: true, nodeLifecycle: false },
    `${ccmStarted(snapshot)} with leader migration`,
  );
}

/**
 * The downgrade's first leader migration phase (upgrade phase 4 in reverse): the CCM rolled out with the
 * flag, so that it runs the cloud controllers under the migration lease while the kube-controller-managers
 * come back in-tree (also with it) and contend for that lease instead of running them beside it. The
 * controller managers are external here: none runs the cloud loops meanwhile. Its node-lifecycle controller
 * stays as it is: off in a rollback (the CCM never saw every node), on in a downgrade (its upgrade saw them).
 */
async function handCcmBack(event: ActivateEvent, ctx: StepContext): Promise<{ leader: string }> {
  const snapshot = await loadSnapshot(ctx, event);
  const current = await currentState(ctx, snapshot, ccmWorkloadOf(renderCcm(snapshot, 0)));
  const nodeLifecycle = current?.nodeLifecycle ?? false;
  return runCcm(
    ctx,
    snapshot,
    { leaderMigration: true, nodeLifecycle },
    'CCM rolled out with leader migration',
  );
}

/**
 * Once the CCM initialised every node (verify-node): the CCM with its full controller set, the
 * node-lifecycle controller on. Only from here may a failed instance lookup delete a Node.
 */
async function completeCcm(event: ActivateEvent, ctx: StepContext): Promise<{ leader: string }> {
  const snapshot = await loadSnapshot(ctx, event);
  // Every kubelet flip is done: their agents' go signals are no longer read.
  await removeGoSignals(ctx.clients, event.runId);
  const current = await currentState(ctx, snapshot, ccmWorkloadOf(renderCcm(snapshot, 0)));
  // Complete already (a cluster found external): left as it runs, not rendered again.
  if (current?.nodeLifecycle) {
    return { leader: await waitFor('a CCM to hold and renew its lease', ccmLeaderPoll(ctx, snapshot), ctx) };
  }
  return runCcm(
    ctx,
    snapshot,
    { leaderMigration: false, nodeLifecycle: true },
    'CCM given its full controller set: cloud-node-lifecycle on',
  );
}

export async function activateCcm(event: ActivateEvent, ctx: StepContext): Promise<{ leader: string }> {
  if (event.handBack) return handCcmBack(event, ctx);
  if (event.nodeLifecycle) return completeCcm(event, ctx);
  if (event.leaderMigration) return startCcmMigrating(event, ctx);
  const snapshot = await loadSnapshot(ctx, event);
  const inTree = providerFacts(snapshot.provider).inTreeName;
  await waitFor(
    'every kube-controller-manager to run without the in-tree provider',
    async () =>
      (await controllerManagersNot(ctx, snapshot, (pod) => cloudProviderOf(pod) !== inTree)).length === 0,
    ctx,
  );
  if (await editKubeadmConfig(ctx, toExternalKubeadm(snapshot))) {
    ctx.progress({ step: 'activate-ccm', message: 'kubeadm-config ClusterConfiguration updated' });
  }
  if (await editKubeletConfigMap(ctx, TO_EXTERNAL_KUBELET)) {
    ctx.progress({ step: 'activate-ccm', message: 'kubelet-config: the in-tree feature gates removed' });
  }
  // After leader migration this is its phase 4: the CCM rolls out without the flag. The first kubelet
  // flips' agents start meanwhile.
  const led = await besidePrestart(
    runCcm(ctx, snapshot, { leaderMigration: false, nodeLifecycle: false }, ccmStarted(snapshot)),
    prestartFirst(event, ctx, 'activate-ccm', (node) => flipRequest(snapshot, event.runId, node)),
  );
  return led;
}
