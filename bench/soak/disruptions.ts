/**
 * What the driver does to the twin while a scenario's runs go on, on a clock from the twin's start (as the
 * spec's own faults count): request-fault bursts turned on and off, and the agent Jobs deleted by another
 * client (an operator cleaning kube-system, a controller pruning Jobs).
 */
import type { KubeClients } from '../../lib/kube/clients.ts';
import type { RunningTwin } from '../../lib/twin/twin.ts';
import type { Scenario } from './scenario.ts';

/** The agent Jobs' label (lib/kube/agent-job.ts): what an operator would select them by. */
const AGENT_JOBS = 'app.kubernetes.io/name=ccm-migrate-agent';

export interface Disruptions {
  /** Agent Jobs deleted so far. */
  readonly deletedJobs: () => number;
  stop(): void;
}

async function deleteAgentJobs(clients: KubeClients): Promise<number> {
  const jobs = await clients.batch.listNamespacedJob({ namespace: 'kube-system', labelSelector: AGENT_JOBS });
  let deleted = 0;
  for (const job of jobs.items) {
    const name = job.metadata?.name ?? '';
    await clients.batch
      .deleteNamespacedJob({ name, namespace: 'kube-system', propagationPolicy: 'Background' })
      .then(() => deleted++)
      .catch(() => undefined);
  }
  return deleted;
}

export function startDisruptions(
  twin: RunningTwin,
  clients: KubeClients,
  s: Scenario,
  startedAt: number,
): Disruptions {
  const timers: NodeJS.Timeout[] = [];
  const at = (ms: number, fn: () => void): void => {
    timers.push(setTimeout(fn, Math.max(0, startedAt + ms - Date.now())));
  };
  let deleted = 0;
  // Each burst its own copy: removal is by identity, and two bursts may be equal.
  const added = s.bursts.map((burst) => ({ ...burst, fault: { ...burst.fault } }));
  for (const { atMs, forMs, fault } of added) {
    at(atMs, () => twin.faults.add(fault));
    at(atMs + forMs, () => twin.faults.remove(fault));
  }
  for (const ms of s.agentJobDeletions) {
    at(ms, () => {
      // Another client's delete meets the same faults; one that fails is a delete that did not happen.
      deleteAgentJobs(clients)
        .then((n) => (deleted += n))
        .catch(() => undefined);
    });
  }
  return {
    deletedJobs: () => deleted,
    stop: () => {
      for (const t of timers) clearTimeout(t);
      for (const { fault } of added) twin.faults.remove(fault);
    },
  };
}
