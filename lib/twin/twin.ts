/**
 * A running twin: the object store, the API server in front of it, and the simulated cluster behind it
 * (kubelets and static pods, workload controllers, the cloud and its controllers, the invariant monitor).
 * `startTwin` wires them; everything stops with `stop()`.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type NodeAnswer, type NodeNetwork, startNodeNetwork } from './api/node-network.ts';
import { type ApiServer, startApiServer } from './api/server.ts';
import { type CloudControllers, startCloudControllers } from './cloud/index.ts';
import { CloudModel } from './cloud/model.ts';
import type { TwinContext } from './context.ts';
import { Faults } from './faults.ts';
import { type InvariantMonitor, startInvariantMonitor } from './invariants.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { type NodeSimulation, startNodes } from './nodes/index.ts';
import { findRealBinaries } from './real/binaries.ts';
import type { RealControlPlane } from './real/control-plane.ts';
import { takeControlPlane } from './real/control-plane-source.ts';
import { startFrontProxy } from './real/front-proxy.ts';
import { startGarbageCollector } from './real/garbage-collector.ts';
import type { ClusterPki } from './real/pki.ts';
import { RemoteStore } from './real/remote-store.ts';
import { startServiceAccountController } from './real/service-accounts.ts';
import { findByKind, typeKey } from './resources.ts';
import type { TwinSpec } from './spec.ts';
import { type ClusterStore, ObjectStore } from './store.ts';
import { startWorkloadControllers, type WorkloadControllers } from './workloads/index.ts';

export interface TwinOptions {
  readonly spec: TwinSpec;
  /** Node files, kubeconfig and invariants.jsonl go here; an existing state dir keeps its node files. */
  readonly stateDir: string;
  readonly host?: string;
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  /** How long to wait for a kube-apiserver static pod to be Ready before giving up. @default 60 s */
  readonly readyTimeoutMs?: number;
  /**
   * Serve the twin from a real kube-apiserver and etcd (built by `npm run setup:kube`) instead of the
   * in-process API server: the simulated cluster runs as clients of that server (ADR 0005).
   */
  readonly realApi?: boolean;
}

/** What a twin on a real API server has besides what every twin has. */
export interface RealApi {
  /** The version of the kube-apiserver binary that serves the twin. */
  readonly version: string;
  /** kube-apiserver's own address (users go through `url`, the proxy that adds faults and availability). */
  readonly apiServerUrl: string;
  readonly pki: ClusterPki;
}

export interface RunningTwin {
  readonly spec: TwinSpec;
  readonly stateDir: string;
  readonly url: string;
  /** A kubeconfig for this twin, written once the API answered. */
  readonly kubeconfigPath: string;
  /**
   * By control-plane node, `<stateDir>/kubeconfig-<node>`: a kubeconfig whose server is that node's own
   * address (reached through the twin's node network), which answers only while its kube-apiserver is up.
   */
  readonly nodeKubeconfigPaths: Readonly<Record<string, string>>;
  /** What the simulated cluster reads and writes: the in-process store, or the real server's cache. */
  readonly store: ClusterStore;
  readonly faults: Faults;
  readonly cloud: CloudModel;
  readonly api: ApiServer;
  readonly nodes: NodeSimulation;
  readonly controllers: CloudControllers;
  readonly monitor: InvariantMonitor;
  /** Set when the twin runs on a real kube-apiserver. */
  readonly realApi: RealApi | undefined;
  /** Whether the API answers now (a kube-apiserver is Ready and no outage window is open). */
  apiAvailable(): boolean;
  stop(): Promise<void>;
}

/** The twin did not come up (no kube-apiserver became Ready, a port in use, …). */
export class TwinStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TwinStartError';
  }
}

/**
 * The spec's objects, created before anything runs (kubeadm wrote them before the nodes joined). A status
 * the spec gives (a Bound PersistentVolume, an attached VolumeAttachment) is written through the status
 * subresource, as the controllers that own it did: a real server drops status on create.
 */
function seedObjects(store: ClusterStore, spec: TwinSpec): void {
  for (const [i, obj] of spec.objects.entries()) {
    const type = findByKind(obj.apiVersion, obj.kind);
    if (!type)
      throw new TwinStartError(`objects[${i}]: the twin does not serve ${obj.apiVersion} ${obj.kind}`);
    try {
      const created = store.create(typeKey(type), structuredClone(obj) as never);
      if (obj.status !== undefined && type.subresources.includes('status')) {
        store.update(
          typeKey(type),
          { ...created, status: structuredClone(obj.status) },
          { subresource: 'status' },
        );
      }
    } catch (err) {
      throw new TwinStartError(`objects[${i}] (${obj.kind} ${obj.metadata.name}): ${(err as Error).message}`);
    }
  }
}

async function waitUntil(check: () => boolean, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline || signal.aborted) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

/** The store and, on a real server, what runs it and what stands in for kube-controller-manager's loops. */
interface Backend {
  readonly store: ClusterStore;
  readonly real?: {
    readonly controlPlane: RealControlPlane;
    readonly remote: RemoteStore;
    readonly pki: ClusterPki;
    /** What the twin's proxy serves users with: it names the control-plane nodes' addresses. */
    readonly serving: { readonly cert: string; readonly key: string };
  };
  /** After the simulated cluster stopped. */
  stop(): Promise<void>;
}

async function startBackend(
  opts: TwinOptions,
  stateDir: string,
  signal: AbortSignal,
  controlPlaneIPs: readonly string[],
): Promise<Backend> {
  if (!opts.realApi) {
    const store = new ObjectStore();
    seedObjects(store, opts.spec);
    return { store, stop: async () => {} };
  }
  const binaries = findRealBinaries(opts.spec.kubernetesVersion);
  const { controlPlane, pki } = await takeControlPlane(binaries, stateDir).catch((err: unknown) => {
    throw new TwinStartError(`the real API server did not start: ${(err as Error).message}`, { cause: err });
  });
  const serving = pki.servingFor(controlPlaneIPs);
  // The twin's own identity: it plays the nodes and the controllers, which kubeadm makes cluster admins.
  const remote = new RemoteStore({
    baseUrl: controlPlane.url,
    tls: pki.clientCert('ccm-migrate-twin', ['system:masters']),
  });
  try {
    await remote.start();
    const accounts = startServiceAccountController(remote);
    const gc = startGarbageCollector(remote, signal);
    seedObjects(remote, opts.spec);
    return {
      store: remote,
      real: { controlPlane, remote, pki, serving },
      stop: async () => {
        accounts.stop();
        gc.stop();
        await remote.stop();
        await controlPlane.stop();
      },
    };
  } catch (err) {
    await remote.stop();
    await controlPlane.stop();
    throw err;
  }
}

export async function startTwin(opts: TwinOptions): Promise<RunningTwin> {
  const stateDir = path.resolve(opts.stateDir);
  await mkdir(stateDir, { recursive: true });
  const abort = new AbortController();
  const startedAt = Date.now();
  const faults = new Faults(opts.spec.faults, { startedAt });
  const cloud = new CloudModel(opts.spec);
  const controlPlane = cloud.placements().filter((p) => p.role === 'control-plane');
  const backend = await startBackend(
    opts,
    stateDir,
    abort.signal,
    controlPlane.map((p) => p.ip),
  );
  const { store, real } = backend;
  const ctx: TwinContext = { spec: opts.spec, store, stateDir, faults, signal: abort.signal, startedAt };

  const nodes = await startNodes(ctx, cloud);
  const workloads: WorkloadControllers = startWorkloadControllers(ctx);
  const controllers = startCloudControllers(ctx, cloud);
  const apiAvailable = (): boolean => nodes.apiServerReady() && !faults.apiOutageAt();
  const monitor = startInvariantMonitor({ ctx, controllers, apiAvailable });

  /** A node's own address answers on its kube-apiserver's port while that kube-apiserver is up. */
  const nodeAnswer = (host: string, port: number): NodeAnswer => {
    const placement = cloud.placements().find((p) => p.ip === host);
    if (!placement) return 'unreachable';
    const apiServer = nodes.apiServerOn(placement.name);
    return apiServer?.port === port && apiServer.ready && !faults.apiOutageAt() ? 'open' : 'refused';
  };

  const stopAll = async (api?: ApiServer, network?: NodeNetwork): Promise<void> => {
    abort.abort();
    await network?.close();
    await api?.close();
    await Promise.all([monitor.stop(), controllers.stop(), workloads.stop(), nodes.stop()]);
    await backend.stop();
  };

  let api: ApiServer;
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 0;
  try {
    api = real
      ? await startFrontProxy({
          ctx,
          upstream: real.controlPlane.url,
          pki: real.pki,
          serving: real.serving,
          apiAvailable,
          host,
          port,
        })
      : await startApiServer({ ctx, store: store as ObjectStore, apiAvailable, host, port });
  } catch (err) {
    await stopAll();
    const inUse = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
    throw new TwinStartError(
      inUse
        ? `the twin's API server could not listen on ${host}:${port}: the port is in use`
        : `the twin's API server could not listen: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const ready = await waitUntil(
    () => nodes.apiServerReady() || !!nodes.apiServerBlocked(),
    timeoutMs,
    abort.signal,
  );
  const blocked = nodes.apiServerBlocked();
  if (!ready || (blocked && !nodes.apiServerReady())) {
    await stopAll(api);
    throw new TwinStartError(
      blocked
        ? `the control plane cannot come up: ${blocked}`
        : `no kube-apiserver static pod became Ready within ${timeoutMs} ms: check the control-plane nodes' /etc/kubernetes/manifests/kube-apiserver.yaml in the spec`,
    );
  }
  const tls = real ? { tls: real.pki.admin } : {};
  const kubeconfigPath = path.join(stateDir, 'kubeconfig');
  await writeKubeconfig(kubeconfigPath, { name: opts.spec.name, server: api.url, ...tls });
  const network = await startNodeNetwork({
    answer: nodeAnswer,
    upstream: { host, port: api.port },
    host,
  }).catch(async (err: unknown) => {
    await stopAll(api);
    throw new TwinStartError(`the twin's node network could not listen: ${(err as Error).message}`, {
      cause: err,
    });
  });
  const nodeKubeconfigPaths: Record<string, string> = {};
  for (const p of controlPlane) {
    const file = path.join(stateDir, `kubeconfig-${p.name}`);
    const port = nodes.apiServerOn(p.name)?.port ?? 6443;
    await writeKubeconfig(file, {
      name: `${opts.spec.name}-${p.name}`,
      server: `${real ? 'https' : 'http'}://${p.ip}:${port}`,
      proxyUrl: network.url,
      ...tls,
    });
    nodeKubeconfigPaths[p.name] = file;
  }

  let stopped: Promise<void> | undefined;
  return {
    spec: opts.spec,
    stateDir,
    url: api.url,
    kubeconfigPath,
    nodeKubeconfigPaths,
    store,
    faults,
    cloud,
    api,
    nodes,
    controllers,
    monitor,
    realApi: real
      ? { version: real.controlPlane.version, apiServerUrl: real.controlPlane.url, pki: real.pki }
      : undefined,
    apiAvailable,
    stop: () => {
      stopped ??= stopAll(api, network);
      return stopped;
    },
  };
}
