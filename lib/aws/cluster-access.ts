/**
 * Cluster access in AWS: the cluster's kubeconfig is the secret `<prefix><clusterId>` in Secrets Manager,
 * read at each invocation (a rotated credential is picked up by the next step) and turned into clients.
 * The secret's text stays in this module; errors name the secret only.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { InvalidInputError } from '../errors.ts';
import { clientsFromKubeconfigText, type KubeClients } from '../kube/clients.ts';
import { DEFAULT_KUBECONFIG_SECRET_PREFIX } from './env.ts';

export function kubeconfigSecretId(clusterId: string, prefix = DEFAULT_KUBECONFIG_SECRET_PREFIX): string {
  return `${prefix}${clusterId}`;
}

export interface ClusterAccessOptions {
  readonly secrets: SecretsManagerClient;
  readonly prefix?: string;
}

let defaultSecrets: SecretsManagerClient | undefined;

/** One Secrets Manager client per container. */
export function secretsClient(): SecretsManagerClient {
  defaultSecrets ??= new SecretsManagerClient({});
  return defaultSecrets;
}

export async function clusterClients(clusterId: string, opts: ClusterAccessOptions): Promise<KubeClients> {
  const secretId = kubeconfigSecretId(clusterId, opts.prefix);
  let text: string | undefined;
  try {
    text = (await opts.secrets.send(new GetSecretValueCommand({ SecretId: secretId }))).SecretString;
  } catch (err) {
    // A missing secret or a denied read is the deployment's fault and stays so: end the run, say which.
    // Anything else (throttling, a network blip) propagates as it is for the state machine to handle.
    const name = (err as { name?: string }).name;
    if (name === 'ResourceNotFoundException' || name === 'AccessDeniedException') {
      throw new InvalidInputError(
        `cannot read the kubeconfig of cluster ${clusterId} (secret ${secretId}): ${name}`,
      );
    }
    throw err;
  }
  if (!text) throw new InvalidInputError(`secret ${secretId} has no string value (a kubeconfig is text)`);
  return clientsFromKubeconfigText(text, `secret ${secretId}`);
}
