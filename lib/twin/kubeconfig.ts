/**
 * The kubeconfig a running twin writes for its users (kubectl, @kubernetes/client-node, ccm-migrate itself).
 * In-process: plain HTTP on loopback (the twin is a local simulator, not a security boundary), with a token
 * random per start so that nothing mistakes one twin's kubeconfig for another's; that twin accepts any
 * token. On a real API server: HTTPS with the cluster CA and a client certificate, as kubeadm's admin.conf.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';

export interface TwinKubeconfigOptions {
  /** Cluster, user and context name. */
  readonly name: string;
  readonly server: string;
  /** The proxy that reaches `server` (a node's own address through the twin's node network). */
  readonly proxyUrl?: string;
  /** PEM: the CA to trust and the user's client certificate and key (a real-API twin). */
  readonly tls?: { readonly ca: string; readonly cert: string; readonly key: string };
}

const b64 = (pem: string): string => Buffer.from(pem).toString('base64');

export function renderKubeconfig(opts: TwinKubeconfigOptions): string {
  const user = `${opts.name}-admin`;
  const { tls } = opts;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: opts.name,
        cluster: {
          server: opts.server,
          ...(opts.proxyUrl ? { 'proxy-url': opts.proxyUrl } : {}),
          // client-node 2.x refuses an http:// server unless TLS verification is explicitly off; kubectl ignores it.
          ...(tls ? { 'certificate-authority-data': b64(tls.ca) } : { 'insecure-skip-tls-verify': true }),
        },
      },
    ],
    users: [
      {
        name: user,
        user: tls
          ? { 'client-certificate-data': b64(tls.cert), 'client-key-data': b64(tls.key) }
          : { token: randomBytes(16).toString('hex') },
      },
    ],
    contexts: [{ name: opts.name, context: { cluster: opts.name, user, namespace: 'default' } }],
    'current-context': opts.name,
    preferences: {},
  });
}

/** Write the kubeconfig readable by its owner only (it holds a token). */
export async function writeKubeconfig(file: string, opts: TwinKubeconfigOptions): Promise<void> {
  await writeFile(file, renderKubeconfig(opts), { mode: 0o600 });
}
