/**
 * The shortest a migration can take (issues 3 and 17), from how long its restarts take: the control-plane
 * nodes' static pods restart one node at a time, kubelets restart in ⌈nodes / maxUnavailable⌉ rounds, and,
 * on the way out, the CCM starts (one pod start) and is rolled out once more with its full controller set.
 * That rollout replaces the leader, which never releases its lease (k8s.io/cloud-provider's leader
 * election sets no ReleaseOnCancel), so the new pod leads only once the old lease expired: a lease duration
 * after the old leader's last renewal, at most a retry period before it stopped. A real cluster waits that
 * out too, so it is in the bound. The way back has no rollout: the CCM stops and the kube-controller-managers,
 * restarted in-tree, lead on their own lease. Everything above the bound is the orchestration's: agent
 * Jobs, node checks, polling, API round trips. The benchmark holds the twin's makespan to it
 * (bench/specs.ts); the run report sets a run's duration against it.
 */
import type { Latencies } from '../twin/spec.ts';

export interface MakespanShape {
  readonly controlPlaneNodes: number;
  readonly nodes: number;
  readonly maxUnavailable: number;
}

export type RestartLatencies = Pick<Latencies, 'staticPodRestart' | 'kubeletRestart' | 'podStart'> &
  Partial<Pick<Latencies, 'leaseDuration'>>;

/** component-base's leader election: a 2 s retry period to a 15 s lease, 2/15 of it. */
const RETRY_PERIOD_OF_LEASE = 2 / 15;

/** Without `leaseDuration` (a run's own restarts, no lease known), the CCM's rollout counts one pod start. */
export function makespanLowerBoundMs(
  shape: MakespanShape,
  latencies: RestartLatencies,
  kind: 'upgrade' | 'downgrade' = 'upgrade',
): number {
  const restarts =
    shape.controlPlaneNodes * latencies.staticPodRestart +
    Math.ceil(shape.nodes / shape.maxUnavailable) * latencies.kubeletRestart;
  if (kind === 'downgrade') return restarts;
  const lease = latencies.leaseDuration;
  const takeover = lease === undefined ? 0 : lease - lease * RETRY_PERIOD_OF_LEASE;
  return restarts + latencies.podStart + Math.max(latencies.podStart, takeover);
}
