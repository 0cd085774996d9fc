/**
 * The shortest an upgrade can take (issue 3), from how long its restarts take: the control-plane nodes'
 * static pods restart one node at a time, kubelets restart in ⌈nodes / maxUnavailable⌉ rounds, and the
 * CCM's rollout is one pod start. Everything above it is the orchestration's: agent Jobs, polling, API round
 * trips, and with leader migration the lease handovers. The benchmark holds the twin's makespan to it
 * (bench/specs.ts); the run report sets a run's duration against it.
 */
import type { Latencies } from '../twin/spec.ts';

export interface MakespanShape {
  readonly controlPlaneNodes: number;
  readonly nodes: number;
  readonly maxUnavailable: number;
}

export type RestartLatencies = Pick<Latencies, 'staticPodRestart' | 'kubeletRestart' | 'podStart'>;

export function makespanLowerBoundMs(shape: MakespanShape, latencies: RestartLatencies): number {
  return (
    shape.controlPlaneNodes * latencies.staticPodRestart +
    Math.ceil(shape.nodes / shape.maxUnavailable) * latencies.kubeletRestart +
    latencies.podStart
  );
}
