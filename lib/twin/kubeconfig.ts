/**
 * The kubeconfig a running twin writes for its users (kubectl, @kubernetes/client-node, ccm-migrate itself).
 * Plain HTTP on loopback: the twin is a local simulator, not a security boundary. The token is random per
 * start so that nothing mistakes one twin's kubeconfig for another's; the twin accepts any token.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';

export interface TwinKubeconfigOptions {
  /** Cluster, user and context name. */
  readonly name: string;
  readonly server: string;
}

export function renderKubeconfig(opts: TwinKubeconfigOptions): string {
  const user = `${opts.name}-admin`;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    // client-node 2.x refuses an http:// server unless TLS verification is explicitly off; kubectl ignores it.
    clusters: [{ name: opts.name, cluster: { server: opts.server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: user, user: { token: randomBytes(16).toString('hex') } }],
    contexts: [{ name: opts.name, context: { cluster: opts.name, user, namespace: 'default' } }],
    'current-context': opts.name,
    preferences: {},
  });
}

/** Write the kubeconfig readable by its owner only (it holds a token). */
export async function writeKubeconfig(file: string, opts: TwinKubeconfigOptions): Promise<void> {
  await writeFile(file, renderKubeconfig(opts), { mode: 0o600 });
}
