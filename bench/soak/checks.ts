/**
 * What a finished scenario is judged by: the cluster's files against the start (or, once migrated, that
 * only the files the run recorded changed, none went missing and every kubelet runs external), what the
 * runs left behind in the API, and whether an exit code tells the truth about the cluster.
 */
import { MANAGED_BY } from '../../lib/kube/ownership.ts';
import { SnapshotSchema } from '../../lib/steps/snapshot.ts';
import type { RunRecord } from '../../lib/store/run-record.ts';
import { nodeNames } from '../../lib/twin/spec.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import type { RunningTwin } from '../../lib/twin/twin.ts';
import type { FileHashes } from './node-files.ts';
import type { Scenario } from './scenario.ts';

/** Every file of the start, byte for byte: what RolledBack, a downgrade and "nothing was changed" promise. */
export function filesNotAsAtStart(start: FileHashes, end: FileHashes): string[] {
  return [...start].filter(([file, sha]) => end.get(file) !== sha).map(([file]) => file);
}

/** Files of the start that are gone: lost whatever the outcome. */
export function filesMissing(start: FileHashes, end: FileHashes): string[] {
  return [...start.keys()].filter((file) => !end.has(file));
}

/**
 * After a migration: a file the run did not record in its snapshot (a file it never meant to change) that
 * changed anyway, or is gone.
 */
export function filesChangedOutsideRun(start: FileHashes, end: FileHashes, record: RunRecord): string[] {
  const snapshot = SnapshotSchema.safeParse(record.snapshot);
  const recorded = new Set(
    snapshot.success
      ? Object.entries(snapshot.data.files).flatMap(([node, files]) => files.map((f) => `${node}${f.path}`))
      : [],
  );
  return filesNotAsAtStart(start, end).filter((file) => !recorded.has(file));
}

/** Nodes whose kubelet (as the twin reads its command line) does not run `want`. */
export function kubeletsNotRunning(
  twin: RunningTwin,
  want: (provider: string | undefined) => boolean,
): string[] {
  return twin.spec.nodeGroups
    .flatMap((g) => nodeNames(g))
    .filter((node) => !want(twin.nodes.kubelet(node).flags.get('cloud-provider')));
}

/** The twin's own store, read past the API and its faults: the checks must not fail for a fault's sake. */
function objects(twin: RunningTwin, key: string, namespace?: string): readonly KubeObject[] {
  return twin.store.list(key, namespace).items;
}

const managed = (o: KubeObject): boolean => o.metadata.labels?.[MANAGED_BY.key] === MANAGED_BY.value;

/** Kinds of the objects a way back removes: the CCM's workload, identity, RBAC and lease. */
const CCM_KINDS = [
  'deployments.apps',
  'daemonsets.apps',
  'serviceaccounts',
  'clusterroles.rbac.authorization.k8s.io',
  'clusterrolebindings.rbac.authorization.k8s.io',
  'rolebindings.rbac.authorization.k8s.io',
  'leases.coordination.k8s.io',
] as const;

/** Objects ccm-migrate created that are still there: after a way back, none may be. */
export function ccmObjectsLeft(twin: RunningTwin): string[] {
  return CCM_KINDS.flatMap((key) =>
    objects(twin, key)
      .filter(managed)
      .map((o) => `${key}/${o.metadata.name}`),
  );
}

const finished = (job: KubeObject): boolean =>
  ((job.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );

const nodeOf = (job: KubeObject): string =>
  (job.spec as { template?: { spec?: { nodeName?: string } } }).template?.spec?.nodeName ?? '';

function unfinishedAgentJobs(twin: RunningTwin): readonly KubeObject[] {
  return objects(twin, 'jobs.batch', 'kube-system').filter(
    (job) => managed(job) && !finished(job) && !job.metadata.deletionTimestamp,
  );
}

/** Nodes that never came back on which a restore waits queued: the way back, done when they return. */
export function restoresWaiting(twin: RunningTwin, s: Scenario): string[] {
  const down = new Set(s.faults.flatMap((f) => (f.kind === 'nodeNeverReturns' ? [f.node] : [])));
  const queued = unfinishedAgentJobs(twin).filter((j) => j.metadata.labels?.['ccm-migrate/op'] === 'restore');
  return [...new Set(queued.map(nodeOf))].filter((node) => down.has(node));
}

/** Nodes tainted uninitialized now (IBM's wait so from birth, for the CCM the upgrade installs). */
export function taintedNodes(twin: RunningTwin): string[] {
  return objects(twin, 'nodes')
    .filter((n) =>
      ((n.spec as { taints?: { key: string }[] }).taints ?? []).some(
        (t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized',
      ),
    )
    .map((n) => n.metadata.name);
}

/**
 * Agent Jobs still to run, and nodes tainted uninitialized that were not at the start: work a finished run
 * must not leave behind. A restore queued on a node that never came back is the way back waiting for it,
 * not litter.
 */
export function workLeft(twin: RunningTwin, s: Scenario, taintedAtStart: readonly string[]): string[] {
  const waiting = new Set(restoresWaiting(twin, s));
  const jobs = unfinishedAgentJobs(twin).filter(
    (job) => !(waiting.has(nodeOf(job)) && job.metadata.labels?.['ccm-migrate/op'] === 'restore'),
  );
  const tainted = taintedNodes(twin).filter((n) => !taintedAtStart.includes(n));
  return [
    ...jobs.map((j) => `unfinished Job/${j.metadata.name}`),
    ...tainted.map((n) => `tainted Node/${n}`),
  ];
}
