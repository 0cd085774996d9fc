/**
 * A running twin: the object store, the API server in front of it, and the simulated cluster behind it
 * (kubelets and static pods, workload controllers, the cloud and its controllers, the invariant monitor).
 * `startTwin` wires them; everything stops with `stop()`.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type ApiServer, startApiServer } from './api/server.ts';
import { type CloudControllers, startCloudControllers } from './cloud/index.ts';
import { CloudModel } from './cloud/model.ts';
import type { TwinContext } from './context.ts';
import { Faults } from './faults.ts';
import { type InvariantMonitor, startInvariantMonitor } from './invariants.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { type NodeSimulation, startNodes } from './nodes/index.ts';
import { findByKind, typeKey } from './resources.ts';
import type { TwinSpec } from './spec.ts';
import { ObjectStore } from './store.ts';
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
}

export interface RunningTwin {
  readonly spec: TwinSpec;
  readonly stateDir: string;
  readonly url: string;
  /** A kubeconfig for this twin, written once the API answered. */
  readonly kubeconfigPath: string;
  readonly store: ObjectStore;
  readonly faults: Faults;
  readonly cloud: CloudModel;
  readonly api: ApiServer;
  readonly nodes: NodeSimulation;
  readonly controllers: CloudControllers;
  readonly monitor: InvariantMonitor;
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

/** The spec's objects, created before anything runs (kubeadm wrote them before the nodes joined). */
function seedObjects(store: ObjectStore, spec: TwinSpec): void {
  for (const [i, obj] of spec.objects.entries()) {
    const type = findByKind(obj.apiVersion, obj.kind);
    if (!type)
      throw new TwinStartError(`objects[${i}]: the twin does not serve ${obj.apiVersion} ${obj.kind}`);
    try {
      store.create(typeKey(type), structuredClone(obj) as never);
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

export async function startTwin(opts: TwinOptions): Promise<RunningTwin> {
  const stateDir = path.resolve(opts.stateDir);
  await mkdir(stateDir, { recursive: true });
  const abort = new AbortController();
  const startedAt = Date.now();
  const faults = new Faults(opts.spec.faults, { startedAt });
  const store = new ObjectStore();
  seedObjects(store, opts.spec);
  const ctx: TwinContext = { spec: opts.spec, store, stateDir, faults, signal: abort.signal, startedAt };
  const cloud = new CloudModel(opts.spec);

  const nodes = await startNodes(ctx, cloud);
  const workloads: WorkloadControllers = startWorkloadControllers(ctx);
  const controllers = startCloudControllers(ctx, cloud);
  const apiAvailable = (): boolean => nodes.apiServerReady() && !faults.apiOutageAt();
  const monitor = startInvariantMonitor({ ctx, controllers, apiAvailable });

  const stopAll = async (api?: ApiServer): Promise<void> => {
    abort.abort();
    await api?.close();
    await Promise.all([monitor.stop(), controllers.stop(), workloads.stop(), nodes.stop()]);
  };

  let api: ApiServer;
  try {
    api = await startApiServer({ ctx, apiAvailable, host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  } catch (err) {
    await stopAll();
    throw new TwinStartError(`the twin's API server could not listen: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  if (!(await waitUntil(nodes.apiServerReady, timeoutMs, abort.signal))) {
    await stopAll(api);
    throw new TwinStartError(
      `no kube-apiserver static pod became Ready within ${timeoutMs} ms: check the control-plane nodes' /etc/kubernetes/manifests/kube-apiserver.yaml in the spec`,
    );
  }
  const kubeconfigPath = path.join(stateDir, 'kubeconfig');
  await writeKubeconfig(kubeconfigPath, { name: opts.spec.name, server: api.url });

  let stopped: Promise<void> | undefined;
  return {
    spec: opts.spec,
    stateDir,
    url: api.url,
    kubeconfigPath,
    store,
    faults,
    cloud,
    api,
    nodes,
    controllers,
    monitor,
    apiAvailable,
    stop: () => {
      stopped ??= stopAll(api);
      return stopped;
    },
  };
}
