/**
 * A node agent result that asks for a kubelet restart: the node's kubelet restarts once the agent's pod
 * has finished. The agent entry point is wrapped to ask for it (its real operations that do so belong to
 * the agent's own work); everything else is the real code path.
 */
import { afterEach, expect, it, vi } from 'vitest';
import {
  agentPod,
  type Harness,
  isReady,
  type Loose,
  miniSpec,
  startHarness,
  waitFor,
} from './nodes-harness.ts';

vi.mock('../../lib/agent/run.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/agent/run.ts')>();
  return {
    ...real,
    runAgent: async (...args: Parameters<typeof real.runAgent>) => ({
      ...(await real.runAgent(...args)),
      restartKubelet: true,
    }),
  };
});

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

it('restarts the kubelet of the agent’s node after the agent pod finished', async () => {
  h = await startHarness(await miniSpec());
  const finishedBeforeRestart: boolean[] = [];
  h.store.subscribe((e) => {
    if (e.key === 'nodes' && e.object.metadata.name === 'worker-1' && !isReady(e.object)) {
      finishedBeforeRestart.push((h?.pod('default', 'agent') as Loose)?.status?.phase === 'Succeeded');
    }
  });
  h.store.create(
    'pods',
    agentPod('worker-1', 'default', {
      op: 'inspect',
      runId: 'r',
      paths: ['/var/lib/kubelet/kubeadm-flags.env'],
    }),
  );
  await waitFor(() => h?.nodes.kubelet('worker-1').restarts === 1, 'the kubelet restart');
  expect(finishedBeforeRestart).toEqual([true]);
  const pod: Loose = h.pod('default', 'agent');
  expect(JSON.parse(pod.status.containerStatuses[0].state.terminated.message).restartKubelet).toBe(true);
  await waitFor(() => isReady(h?.node('worker-1')), 'worker-1 Ready again');
  expect(h.nodes.kubelet('worker-1').restarts).toBe(1);
});
