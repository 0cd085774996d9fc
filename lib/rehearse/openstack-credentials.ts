/**
 * OpenStack's in-tree provider could take its credentials from a Secret its cloud.conf names ([Global]
 * secret-name / secret-namespace), which the migration reads. The snapshot learns that name as preflight
 * does, from the node agent's translate-cloud-config dry run (which answers the name and never a line of
 * the file), and whether the Secret exists from its metadata only: the twin gets a cloud.conf placeholder
 * naming the same Secret and, if the cluster has it, a placeholder Secret of that name.
 */
import {
  OPENSTACK_CREDENTIALS_KEY,
  translatedCloudConfigPath,
} from '../controlplane/openstack-cloud-config.ts';
import { KubeApiRejectedError } from '../errors.ts';
import type { KubeClients } from '../kube/clients.ts';
import { readSecretMetadata } from '../kube/metadata.ts';
import type { AgentCall } from './node-files.ts';
import { placeholderSecret } from './placeholders.ts';

export interface OpenStackCredentials {
  /** What the placeholder cloud.conf says, so that the twin's preflight sees what the real one does. */
  readonly cloudConfLines: string;
  /** The placeholder Secret, when the cluster has the one cloud.conf names. */
  readonly secret?: ReturnType<typeof placeholderSecret>;
}

export async function openStackCredentials(opts: {
  readonly clients: KubeClients;
  readonly agent: AgentCall;
  readonly runId: string;
  readonly node: string;
  readonly cloudConf: string;
}): Promise<OpenStackCredentials> {
  const answer = await opts.agent(opts.node, {
    op: 'translate-cloud-config',
    runId: opts.runId,
    provider: 'openstack',
    source: opts.cloudConf,
    target: translatedCloudConfigPath(opts.cloudConf),
    dryRun: true,
  });
  const named = answer.credentialsSecret;
  const lines = [
    ...(named ? [`secret-name = ${named.name}`, `secret-namespace = ${named.namespace}`] : []),
    ...(answer.useOctavia === undefined ? [] : ['', '[LoadBalancer]', `use-octavia = ${answer.useOctavia}`]),
  ];
  const cloudConfLines = lines.length > 0 ? `${lines.join('\n')}\n` : '';
  if (!named) return { cloudConfLines };
  const exists = await readSecretMetadata(opts.clients, named).catch((err: unknown) => {
    // An identity that may not read it cannot tell: the twin then lacks it, and its preflight says so.
    if (err instanceof KubeApiRejectedError && err.status === 403) return undefined;
    throw err;
  });
  return {
    cloudConfLines,
    ...(exists
      ? { secret: placeholderSecret(named.name, named.namespace, [OPENSTACK_CREDENTIALS_KEY]) }
      : {}),
  };
}
