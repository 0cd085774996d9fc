/**
 * A real etcd and kube-apiserver as child processes, each on free loopback ports, started the way envtest
 * and kubeadm start them (the flags a standalone server needs: the API server's own serving certificate,
 * client certificates of the cluster CA, the service-account key pair and issuer, RBAC), plus the
 * front-proxy flags kubeadm sets, so the twin's proxy can pass on who is calling. Each start waits for
 * health; a process that exits or never gets healthy is named with the last lines of its log, and
 * whatever was started is stopped again.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import type { RealBinaries } from './binaries.ts';
import type { ClusterPki } from './pki.ts';

export interface RealControlPlane {
  /** kube-apiserver's own address (the twin's users reach it through the proxy). */
  readonly url: string;
  readonly version: string;
  stop(): Promise<void>;
}

/** A real control-plane process did not start. */
export class ControlPlaneStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ControlPlaneStartError';
  }
}

const ETCD_READY_MS = 20_000;
const APISERVER_READY_MS = 60_000;

/** A port nothing listens on now (the OS picks it; the process binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface Managed {
  readonly name: string;
  readonly child: ChildProcess;
  readonly log: string;
  exited: boolean;
  stop(): Promise<void>;
}

/** The last lines of a process's log, for an error message. */
function logTail(file: string, lines = 12): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const running = new Set<Managed>();
// A test runner or an operator's Ctrl-C must not leave servers behind: whatever still runs is killed
// when this process exits (and by its watchdog, below, when it is killed outright).
process.on('exit', () => {
  for (const m of running) if (!m.exited) m.child.kill('SIGKILL');
});

/**
 * A process that kills `pid` once this process is gone: the exit handler above does not run when this
 * process is killed outright (SIGKILL, the OOM killer), and Linux offers Node no parent-death signal.
 * In a session of its own, so that Ctrl-C on the terminal does not take it first.
 */
function watchdog(pid: number): ChildProcess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${pid} 2>/dev/null`;
  const dog = spawn('/bin/sh', ['-c', script], { stdio: 'ignore', detached: true });
  dog.unref();
  return dog;
}

function launch(name: string, binary: string, args: string[], dir: string): Managed {
  const log = path.join(dir, `${name}.log`);
  const out = openSync(log, 'a');
  const child = spawn(binary, args, { stdio: ['ignore', out, out] });
  const dog = child.pid === undefined ? undefined : watchdog(child.pid);
  const managed: Managed = {
    name,
    child,
    log,
    exited: false,
    // Killed outright: a twin's etcd and API server hold nothing worth a graceful shutdown, which costs
    // kube-apiserver a second.
    stop: () =>
      new Promise<void>((resolve) => {
        if (managed.exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
  running.add(managed);
  const gone = (): void => {
    managed.exited = true;
    running.delete(managed);
    dog?.kill('SIGKILL');
  };
  child.once('exit', gone);
  child.once('error', gone);
  return managed;
}

async function waitHealthy(m: Managed, timeoutMs: number, healthy: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (m.exited) {
      throw new ControlPlaneStartError(`${m.name} exited while starting (log ${m.log}):\n${logTail(m.log)}`);
    }
    if (await healthy().catch(() => false)) return;
    if (Date.now() > deadline) {
      throw new ControlPlaneStartError(
        `${m.name} was not healthy within ${timeoutMs / 1000} s (log ${m.log}):\n${logTail(m.log)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function httpOk(url: string, tls?: https.RequestOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const client = url.startsWith('https:') ? https : http;
    const req = client.get(url, { ...tls, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

export async function startRealControlPlane(opts: {
  binaries: RealBinaries;
  pki: ClusterPki;
  /** Logs and etcd's data go here. */
  dir: string;
}): Promise<RealControlPlane> {
  const { binaries, pki, dir } = opts;
  // A twin starts from its spec: data an earlier run of this state dir left in etcd would clash with it.
  rmSync(path.join(dir, 'etcd'), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const [client, peer, secure] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${client}`;
  const etcd = launch(
    'etcd',
    binaries.etcd,
    [
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=default=http://127.0.0.1:${peer}`,
      '--log-level=warn',
      // A twin's etcd holds nothing worth a disk flush per write.
      '--unsafe-no-fsync',
    ],
    dir,
  );
  const started: Managed[] = [etcd];
  try {
    await waitHealthy(etcd, ETCD_READY_MS, () => httpOk(`${etcdUrl}/health`));
    const url = `https://127.0.0.1:${secure}`;
    const apiServer = launch(
      'kube-apiserver',
      binaries.apiServer,
      [
        `--etcd-servers=${etcdUrl}`,
        `--secure-port=${secure}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        // An advertise address on loopback is refused by the endpoint reconciler, which a twin does not need.
        '--endpoint-reconciler-type=none',
        `--tls-cert-file=${pki.serving.certFile}`,
        `--tls-private-key-file=${pki.serving.keyFile}`,
        `--client-ca-file=${pki.caFile}`,
        `--service-account-key-file=${pki.serviceAccountPublicKeyFile}`,
        `--service-account-signing-key-file=${pki.serviceAccountKeyFile}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        '--authorization-mode=Node,RBAC',
        '--service-cluster-ip-range=10.96.0.0/12',
        '--allow-privileged=true',
        `--requestheader-client-ca-file=${pki.frontProxyCaFile}`,
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        '--profiling=false',
      ],
      dir,
    );
    started.push(apiServer);
    const admin = { ca: pki.caCert, cert: pki.admin.cert, key: pki.admin.key };
    await waitHealthy(apiServer, APISERVER_READY_MS, () => httpOk(`${url}/readyz`, admin));
    let stopped: Promise<void> | undefined;
    return {
      url,
      version: binaries.version,
      stop: () => {
        stopped ??= (async () => {
          await apiServer.stop();
          await etcd.stop();
        })();
        return stopped;
      },
    };
  } catch (err) {
    for (const m of started.reverse()) await m.stop();
    throw err;
  }
}
