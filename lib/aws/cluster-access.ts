/**
 * Cluster access in AWS: the cluster's kubeconfig is a secret in Secrets Manager, read at each invocation
 * (a rotated credential is picked up by the next step) and turned into clients. The secret is the one the
 * registry record names when there is a record (its ARN carries the suffix Secrets Manager adds, so it is
 * exact), else `<prefix><clusterId>`; either way under the prefix, the only secrets the functions may read.
 * The secret's text stays in this module; errors name the secret only.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { InvalidInputError } from '../errors.ts';
import { clientsFromKubeconfigText, type KubeClients } from '../kube/clients.ts';
import { DEFAULT_KUBECONFIG_SECRET_PREFIX } from './env.ts';

/**
 * The SecretId to read: `recordArn` (the registry's kubeconfigSecretArn) when given, else the convention.
 * A record naming a secret outside the prefix is refused here, with why, rather than denied by IAM.
 */
export function kubeconfigSecretId(
  clusterId: string,
  prefix = DEFAULT_KUBECONFIG_SECRET_PREFIX,
  recordArn?: string,
): string {
  if (!recordArn) return `${prefix}${clusterId}`;
  const name = recordArn.split(':secret:')[1] ?? '';
  if (!name.startsWith(prefix)) {
    throw new InvalidInputError(
      `the registry names secret ${recordArn} for cluster ${clusterId}: the functions may read only secrets ` +
        `under ${prefix}`,
    );
  }
  return recordArn;
}

export interface ClusterAccessOptions {
  readonly secrets: SecretsManagerClient;
  readonly prefix?: string;
  /** The registry record's kubeconfigSecretArn: wins over `<prefix><clusterId>`. */
  readonly secretArn?: string;
}

let defaultSecrets: SecretsManagerClient | undefined;

/** One Secrets Manager client per container. */
export function secretsClient(): SecretsManagerClient {
  defaultSecrets ??= new SecretsManagerClient({});
  return defaultSecrets;
}

export async function clusterClients(clusterId: string, opts: ClusterAccessOptions): Promise<KubeClients> {
  const secretId = kubeconfigSecretId(clusterId, opts.prefix, opts.secretArn);
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
