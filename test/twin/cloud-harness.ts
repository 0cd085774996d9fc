/**
 * Test support for the cloud controllers and the invariant monitor: a store, a cloud and a context from the
 * aws-mini fixture, and the objects kubelets would write (Nodes, Ready mirror pods, CCM pods), without
 * the rest of the twin.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { UNINITIALIZED_TAINT } from '../../lib/kube/well-known.ts';
import { type CloudControllers, startCloudControllers } from '../../lib/twin/cloud/index.ts';
import { CloudModel } from '../../lib/twin/cloud/model.ts';
import type { TwinContext } from '../../lib/twin/context.ts';
import { Faults } from '../../lib/twin/faults.ts';
import { loadTwinSpec, type TwinSpec } from '../../lib/twin/spec.ts';
import { type KubeObject, ObjectStore } from '../../lib/twin/store.ts';

const AWS_MINI = fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url));
const KUBEADM_KCM = fileURLToPath(
  new URL(
    '../../assets/twins/hosts/kubeadm-v1.26-aws/etc/kubernetes/manifests/kube-controller-manager.yaml',
    import.meta.url,
  ),
);

export interface CloudHarness {
  readonly spec: TwinSpec;
  readonly ctx: TwinContext;
  readonly store: ObjectStore;
  readonly cloud: CloudModel;
  readonly controllers: CloudControllers;
  /** The invariants.jsonl lines written so far. */
  invariantLines(): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}

/** The aws-mini fixture (optionally edited) behind a store and the cloud controllers. */
export async function startHarness(edit: (spec: TwinSpec) => TwinSpec = (s) => s): Promise<CloudHarness> {
  const spec = edit(await loadTwinSpec(AWS_MINI));
  const stateDir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cloud-test-'));
  const abort = new AbortController();
  const store = new ObjectStore();
  const startedAt = Date.now();
  const ctx: TwinContext = {
    spec,
    store,
    stateDir,
    faults: new Faults(spec.faults, { startedAt }),
    signal: abort.signal,
    startedAt,
  };
  const cloud = new CloudModel(spec);
  // The API answers: a Ready kube-apiserver mirror pod, as cp-1's kubelet writes it.
  writePod(store, {
    name: 'kube-apiserver-cp-1',
    node: 'cp-1',
    container: 'kube-apiserver',
    argv: ['kube-apiserver'],
  });
  const controllers = startCloudControllers(ctx, cloud);
  return {
    spec,
    ctx,
    store,
    cloud,
    controllers,
    invariantLines: async () => {
      const text = await readFile(path.join(stateDir, 'invariants.jsonl'), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    stop: async () => {
      abort.abort();
      await controllers.stop();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** Register a node as a kubelet does: Ready or not, tainted when its kubelet runs with an external provider. */
export function writeNode(
  store: ObjectStore,
  name: string,
  opts: { ready?: boolean; uninitialized?: boolean; providerID?: string } = {},
): KubeObject {
  const created = store.create('nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: {
      ...(opts.providerID ? { providerID: opts.providerID } : {}),
      ...(opts.uninitialized
        ? { taints: [{ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' }] }
        : {}),
    },
  });
  return setNodeReady(store, created.metadata.name, opts.ready ?? true);
}

export function setNodeReady(store: ObjectStore, name: string, ready: boolean): KubeObject {
  const node = store.get('nodes', undefined, name);
  const status = ready ? 'True' : 'Unknown';
  return store.update(
    'nodes',
    { ...structuredClone(node), status: { conditions: [{ type: 'Ready', status }] } },
    { subresource: 'status' },
  );
}

export interface PodSpec {
  readonly name: string;
  readonly namespace?: string;
  readonly node: string;
  readonly container: string;
  readonly argv: readonly string[];
  readonly ready?: boolean;
}

/** A pod as the kubelet reports it (created, then its Ready condition through the status subresource). */
export function writePod(store: ObjectStore, pod: PodSpec): KubeObject {
  const [command, ...args] = pod.argv;
  store.create('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod.name, namespace: pod.namespace ?? 'kube-system' },
    spec: { nodeName: pod.node, containers: [{ name: pod.container, command: [command], args }] },
  });
  return setPodReady(store, pod.namespace ?? 'kube-system', pod.name, pod.ready ?? true);
}

export function setPodReady(store: ObjectStore, namespace: string, name: string, ready: boolean): KubeObject {
  const pod = store.get('pods', namespace, name);
  return store.update(
    'pods',
    {
      ...structuredClone(pod),
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
    },
    { subresource: 'status' },
  );
}

/** The kubeadm v1.26 kube-controller-manager command (with `--cloud-provider=aws`), optionally edited. */
export async function kubeadmKcmCommand(edit: (argv: string[]) => string[] = (a) => a): Promise<string[]> {
  const manifest = parseYaml(await readFile(KUBEADM_KCM, 'utf8')) as {
    spec: { containers: { command: string[] }[] };
  };
  return edit([...(manifest.spec.containers[0]?.command ?? [])]);
}

/** The kube-controller-manager mirror pod of a control-plane node. */
export function writeKcm(store: ObjectStore, node: string, argv: readonly string[]): KubeObject {
  return writePod(store, {
    name: `kube-controller-manager-${node}`,
    node,
    container: 'kube-controller-manager',
    argv,
  });
}

/** An external AWS cloud-controller-manager pod (args as in cloud-provider-aws's manifests). */
export function writeCcm(
  store: ObjectStore,
  name: string,
  node: string,
  extraArgs: readonly string[] = [],
): KubeObject {
  return writePod(store, {
    name,
    node,
    container: 'cloud-controller-manager',
    argv: ['/bin/aws-cloud-controller-manager', '--cloud-provider=aws', '--v=2', ...extraArgs],
  });
}

export function lease(
  store: ObjectStore,
  name: string,
):
  | {
      holderIdentity?: string;
      leaseTransitions?: number;
      leaseDurationSeconds?: number;
      acquireTime?: string;
      renewTime?: string;
    }
  | undefined {
  return store.tryGet('leases.coordination.k8s.io', 'kube-system', name)?.spec as never;
}

/** Poll until `check` returns something other than undefined/false, or fail after `timeoutMs`. */
export async function until<T>(
  check: () => T | undefined | false,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
