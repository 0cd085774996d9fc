/**
 * The certificates of a real-API twin, laid out as kubeadm lays out /etc/kubernetes/pki: a cluster CA that
 * signs the API server's serving certificate and every client certificate (the subject's O is the group),
 * a front-proxy CA whose client the twin's proxy presents, and the service-account key pair. Made with the
 * openssl command (ECDSA P-256: fast to make, accepted by every kube-apiserver). kube-apiserver itself is
 * reached on loopback only; the twin's proxy, which users reach at the control-plane nodes' addresses,
 * serves a certificate of the same CA that names them (servingFor), so a control plane can be started
 * before the twin's nodes are known.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { InvalidInputError } from '../../errors.ts';
import type { ClientTls } from './sync-http.ts';

export interface ClusterPki {
  readonly dir: string;
  readonly caFile: string;
  readonly caCert: string;
  readonly serving: {
    readonly certFile: string;
    readonly keyFile: string;
    readonly cert: string;
    readonly key: string;
  };
  readonly frontProxyCaFile: string;
  /** What the twin's proxy presents to kube-apiserver (CN=front-proxy-client, as kubeadm names it). */
  readonly frontProxyClient: ClientTls;
  readonly serviceAccountKeyFile: string;
  readonly serviceAccountPublicKeyFile: string;
  /** kubeadm's admin.conf identity: CN=kubernetes-admin, O=system:masters. */
  readonly admin: ClientTls;
  /** A client certificate of the cluster CA for this user and these groups (RBAC tests). */
  clientCert(user: string, groups?: readonly string[]): ClientTls;
  /** A serving certificate of the cluster CA that also names these addresses, as kubeadm's names the node's. */
  servingFor(nodeIPs: readonly string[]): { cert: string; key: string };
}

const DAYS = '3650';
const CURVE = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new InvalidInputError(
        'the openssl command was not found: the real-API twin makes its certificates with it',
      );
    }
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`openssl ${args[0]} failed: ${stderr || (err as Error).message}`);
  }
}

/** A subject in openssl's -subj form; `/` and `,` in names are escaped. */
function subject(cn: string, orgs: readonly string[] = []): string {
  const esc = (v: string): string => v.replace(/([/,\\])/g, '\\$1');
  return `${orgs.map((o) => `/O=${esc(o)}`).join('')}/CN=${esc(cn)}`;
}

function makeCa(dir: string, name: string, cn: string): void {
  openssl(
    [
      'req',
      '-x509',
      ...CURVE,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      DAYS,
      '-subj',
      subject(cn),
    ],
    dir,
  );
}

function makeSigned(
  dir: string,
  opts: { name: string; ca: string; subj: string; extensions: string },
): { certFile: string; keyFile: string } {
  const ext = `${opts.name}.ext`;
  writeFileSync(path.join(dir, ext), `${opts.extensions}\n`);
  openssl(
    ['req', ...CURVE, '-keyout', `${opts.name}.key`, '-out', `${opts.name}.csr`, '-subj', opts.subj],
    dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${opts.name}.csr`,
      '-CA',
      `${opts.ca}.crt`,
      '-CAkey',
      `${opts.ca}.key`,
      '-CAcreateserial',
      '-out',
      `${opts.name}.crt`,
      '-days',
      DAYS,
      '-extfile',
      ext,
    ],
    dir,
  );
  return { certFile: path.join(dir, `${opts.name}.crt`), keyFile: path.join(dir, `${opts.name}.key`) };
}

const CLIENT_EXT = 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth';

const SERVING_EXT = 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth';
const SERVING_NAMES =
  'IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1';

export function createClusterPki(dir: string): ClusterPki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const read = (file: string): string => readFileSync(path.join(dir, file), 'utf8');
  makeCa(dir, 'ca', 'kubernetes');
  makeCa(dir, 'front-proxy-ca', 'front-proxy-ca');
  const serving = makeSigned(dir, {
    name: 'apiserver',
    ca: 'ca',
    subj: subject('kube-apiserver'),
    extensions: `${SERVING_EXT}\nsubjectAltName=${SERVING_NAMES}`,
  });
  makeSigned(dir, {
    name: 'front-proxy-client',
    ca: 'front-proxy-ca',
    subj: subject('front-proxy-client'),
    extensions: CLIENT_EXT,
  });
  openssl(['genpkey', '-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'sa.key'], dir);
  openssl(['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  const caCert = read('ca.crt');
  let serial = 0;
  const clientCert = (user: string, groups: readonly string[] = []): ClientTls => {
    const name = `client-${++serial}`;
    makeSigned(dir, { name, ca: 'ca', subj: subject(user, groups), extensions: CLIENT_EXT });
    return { ca: caCert, cert: read(`${name}.crt`), key: read(`${name}.key`) };
  };
  const servingFor = (nodeIPs: readonly string[]): { cert: string; key: string } => {
    const name = `serving-${++serial}`;
    const names = [SERVING_NAMES, ...nodeIPs.map((ip) => `IP:${ip}`)].join(',');
    makeSigned(dir, {
      name,
      ca: 'ca',
      subj: subject('kube-apiserver'),
      extensions: `${SERVING_EXT}\nsubjectAltName=${names}`,
    });
    return { cert: read(`${name}.crt`), key: read(`${name}.key`) };
  };
  return {
    dir,
    caFile: path.join(dir, 'ca.crt'),
    caCert,
    serving: { ...serving, cert: read('apiserver.crt'), key: read('apiserver.key') },
    frontProxyCaFile: path.join(dir, 'front-proxy-ca.crt'),
    frontProxyClient: {
      ca: caCert,
      cert: read('front-proxy-client.crt'),
      key: read('front-proxy-client.key'),
    },
    serviceAccountKeyFile: path.join(dir, 'sa.key'),
    serviceAccountPublicKeyFile: path.join(dir, 'sa.pub'),
    admin: clientCert('kubernetes-admin', ['system:masters']),
    clientCert,
    servingFor,
  };
}
