/**
 * What one migration costs the cluster and the AWS account: its API requests by verb against the fewest
 * its sequence needs (target ≤ 1.3× that, issue 17), and its state transitions (target ≤ 150 for 3 + 50 nodes) with
 * the Step Functions Standard price they imply.
 */
import { renderCcm } from '../lib/steps/ccm.ts';
import { TO_EXTERNAL_STATIC_PODS } from '../lib/steps/edits.ts';
import type { Snapshot } from '../lib/steps/snapshot.ts';
import type { BenchRow } from './report.ts';
import type { UpgradeMeasurement } from './upgrade-run.ts';

/** listNodes (lib/steps/cluster.ts) reads nodes in pages of this many. */
const NODE_PAGE = 500;

interface Term {
  readonly verb: 'get' | 'list' | 'create' | 'patch' | 'update' | 'delete' | 'other';
  readonly count: number;
  readonly why: string;
}

/**
 * The fewest API requests an upgrade without leader migration needs, from lib/steps/*.ts, for the cluster
 * preflight recorded: one request per fact a step must learn, per object it must write, and per wait (a
 * wait that ends at its first look still looks once). Not counted: reads made only to report whether an
 * apply changed something, a second read where one would do, and API discovery. A wait served by a watch
 * instead of polling shows up as `watch`, which the minimum counts as the one get/list of that wait.
 * - per agent Job (an inspect per node, a control-plane move per control-plane node, a kubelet flip per
 *   node): create it, read it once finished, list its pods for the answer, delete it;
 * - the agent bundle's ConfigMap applied once; the CCM's rendered objects applied once when staged, its
 *   Deployment once more when started (the replicas);
 * - preflight: /version, the nodes (one list per page), the services, kubeadm-config;
 * - stage: the CCM Deployment read (a resumed run must not scale a started CCM down);
 * - per control-plane move: one read of each rewritten component's mirror pod;
 * - activate: one read of each kube-controller-manager mirror pod, kubeadm-config read and replaced (when
 *   the cluster has one), the lease read (first start or rollout), then one look at the leader: the CCM
 *   pods listed and the lease read;
 * - per kubelet flip: one read of the node;
 * - per node check: the node read, tainted, and read once the CCM cleared it;
 * - the CCM's full controller set: its Deployment read and applied, the lease read (before and once led),
 *   the CCM pods listed;
 * - verify: one look at the leader (pods, lease), the nodes listed, the services listed.
 * - pipelined agents (lib/steps/prestart.ts): every agent Job of a control-plane move but the first and of a
 *   kubelet flip is created ahead of its turn and told to go at it (one patch each); preflight's but the
 *   first are created beside it and told to go together, their go taken back once they answered (one patch
 *   each), the account looked for first (a run refused there removes the one it created); the agents' account applied once (ServiceAccount, Role, RoleBinding, the go ConfigMap); the go
 *   signals read and taken back once the flips are done.
 * - storage, at preflight and again at verify: PersistentVolumes and StorageClasses listed, and where one is
 *   in-tree the CSIDrivers, CSINodes and VolumeAttachments too (lib/steps/storage.ts).
 */
function minimumUpgradeRequests(snapshot: Snapshot): Term[] {
  const nodes = Object.keys(snapshot.nodes).length;
  const controlPlane = Object.values(snapshot.nodes).filter((n) => n.role === 'control-plane').length;
  const jobs = nodes + controlPlane + nodes;
  const pages = Math.ceil(nodes / NODE_PAGE);
  const kubeadm = snapshot.kubeadmClusterConfiguration !== undefined;
  const storage = snapshot.storage;
  const storageLists =
    2 + (storage && (storage.volumes.length > 0 || storage.inTreeClasses.length > 0) ? 3 : 0);
  return [
    { verb: 'create', count: jobs, why: 'agent Jobs' },
    { verb: 'get', count: jobs, why: 'agent Jobs, read once finished' },
    { verb: 'list', count: jobs, why: 'agent Jobs, their pods' },
    { verb: 'delete', count: jobs, why: 'agent Jobs' },
    { verb: 'patch', count: 1, why: 'agent bundle ConfigMap' },
    { verb: 'patch', count: renderCcm(snapshot, 0).length, why: 'CCM objects staged' },
    { verb: 'patch', count: 1, why: 'CCM Deployment started' },
    { verb: 'other', count: 1, why: 'preflight: /version' },
    { verb: 'list', count: pages, why: 'preflight: nodes' },
    { verb: 'list', count: 1, why: 'preflight: services' },
    { verb: 'get', count: 1, why: 'preflight: kubeadm-config' },
    { verb: 'get', count: 1, why: 'stage: CCM Deployment' },
    {
      verb: 'get',
      count: controlPlane * TO_EXTERNAL_STATIC_PODS.length,
      why: 'control-plane moves: mirror pods',
    },
    { verb: 'get', count: controlPlane, why: 'activate: kube-controller-manager mirror pods' },
    { verb: 'get', count: 1, why: 'activate: kubeadm-config' },
    { verb: 'update', count: kubeadm ? 1 : 0, why: 'activate: kubeadm-config' },
    { verb: 'get', count: 2, why: 'activate: CCM lease, before and once led' },
    { verb: 'list', count: 1, why: 'activate: CCM pods' },
    { verb: 'get', count: nodes, why: 'kubelet flips: node Ready' },
    { verb: 'get', count: 2 * nodes, why: 'node checks: node, before and once cleared' },
    { verb: 'patch', count: nodes, why: 'node checks: uninitialized taint' },
    { verb: 'get', count: 1, why: 'full controller set: CCM Deployment' },
    { verb: 'patch', count: 1, why: 'full controller set: CCM Deployment' },
    { verb: 'get', count: 2, why: 'full controller set: CCM lease, before and once led' },
    { verb: 'list', count: 1, why: 'full controller set: CCM pods' },
    { verb: 'list', count: 1, why: 'verify: CCM pods' },
    { verb: 'get', count: 1, why: 'verify: CCM lease' },
    { verb: 'list', count: pages, why: 'verify: nodes' },
    { verb: 'list', count: 1, why: 'verify: services' },
    { verb: 'list', count: 2 * storageLists, why: 'preflight and verify: storage' },
    { verb: 'patch', count: controlPlane - 1 + nodes, why: 'pre-started agent Jobs: their go' },
    { verb: 'patch', count: 2, why: "preflight's pre-started agent Jobs: their go, given and taken back" },
    { verb: 'get', count: 1, why: "preflight: whether the agents' account was there (a refusal removes it)" },
    { verb: 'patch', count: 4, why: 'pre-started agents: their account and go ConfigMap' },
    { verb: 'get', count: 1, why: 'go signals: read once the flips are done' },
    { verb: 'patch', count: 1, why: 'go signals: taken back' },
  ];
}

const REQUEST_TARGET = 1.3;

/**
 * In all, against 1.3× the minimum (the target), and per verb with that verb's minimum beside it: a watch
 * stands in for polls, so the verbs trade places and only the total is judged.
 */
export function requestRows(m: UpgradeMeasurement, label: string): BenchRow[] {
  const minimum: Record<string, number> = {};
  for (const t of minimumUpgradeRequests(m.snapshot)) minimum[t.verb] = (minimum[t.verb] ?? 0) + t.count;
  const verbs = [...new Set([...Object.keys(minimum), ...Object.keys(m.requests)])].sort();
  const row = (name: string, value: number, min: number, note: string, judged = false): BenchRow => ({
    name: `API requests per migration, ${label}: ${name}`,
    value,
    unit: 'req',
    ...(judged ? { target: REQUEST_TARGET * min, better: 'lower' as const } : {}),
    note,
  });
  const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
  const total = sum(m.requests);
  const least = sum(minimum);
  return [
    row('all', total, least, `${(total / least).toFixed(2)}× the minimum ${least}; target 1.3× it`, true),
    ...verbs.map((verb) => {
      const min = minimum[verb] ?? 0;
      const note =
        verb === 'watch'
          ? 'the minimum counts each wait as one get or list'
          : verb === 'other'
            ? `/version and API discovery; minimum ${min}`
            : `minimum ${min}`;
      return row(verb, m.requests[verb] ?? 0, min, note);
    }),
  ];
}

/** Step Functions Standard: $0.025 per 1,000 state transitions (https://aws.amazon.com/step-functions/pricing/, us-east-1, beyond the free tier). */
const USD_PER_TRANSITION = 0.025 / 1000;

/** The run's state transitions, counted from the local engine's event log, and what Step Functions bills for them. */
export function transitionRows(m: UpgradeMeasurement, label: string, target?: number): BenchRow[] {
  const { transitions } = m.result;
  const usd = transitions * USD_PER_TRANSITION;
  return [
    {
      name: `state transitions per migration, ${label}`,
      value: transitions,
      unit: '',
      ...(target === undefined ? {} : { target, better: 'lower' as const }),
      note: 'from the local engine’s event log',
    },
    {
      name: `Step Functions cost per 1,000 migrations, ${label}`,
      value: usd * 1000,
      unit: 'USD',
      note: `$${usd.toFixed(5)} per migration at $0.025 per 1,000 Standard transitions; Lambda not included`,
    },
  ];
}
