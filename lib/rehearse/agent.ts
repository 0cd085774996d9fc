/**
 * The node agent as `twin snapshot` and `rehearse` run it on the real cluster: the same Jobs as every
 * command (lib/kube/agent-job.ts), with one difference: a Job whose answer never came (a node whose kubelet
 * does not run it) is deleted at once, since no retry of this command will come back for it.
 */
import { agentJobName } from '../kube/agent-job.ts';
import type { KubeClients } from '../kube/clients.ts';
import { localContext } from '../local/context.ts';
import type { AgentCall } from './node-files.ts';

export function readOnlyAgent(
  clients: KubeClients,
  opts: { agentImage?: string; waitMs?: number } = {},
): AgentCall {
  const ctx = localContext({
    clients,
    ...(opts.agentImage ? { agentImage: opts.agentImage } : {}),
    ...(opts.waitMs ? { waitMs: opts.waitMs } : {}),
  });
  return async (node, request) => {
    try {
      return await ctx.agent(node, request);
    } catch (err) {
      await clients.batch
        .deleteNamespacedJob({
          name: agentJobName(node, request),
          namespace: 'kube-system',
          propagationPolicy: 'Background',
        })
        .catch(() => undefined);
      throw err;
    }
  };
}
