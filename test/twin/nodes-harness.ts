/**
 * Test support for the node simulation on its own: an ObjectStore, Faults, the CloudModel and startNodes
 * on a fixture spec (host files optionally edited), with helpers to read and write node files and to wait.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_NAME, AGENT_REQUEST_ENV } from '../../lib/agent/protocol.ts';
import { CloudModel } from '../../lib/twin/cloud/model.ts';
import { hostPath, type TwinContext } from '../../lib/twin/context.ts';
import { Faults } from '../../lib/twin/faults.ts';
import { type NodeSimulation, startNodes } from '../../lib/twin/nodes/index.ts';
import { loadTwinSpec, parseTwinSpec, type TwinSpec } from '../../lib/twin/spec.ts';
import { type KubeObject, ObjectStore } from '../../lib/twin/store.ts';

export { dropCloudFlags, kubeletExternal } from './running-twin.ts';

export const AWS_MINI = fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url));

export const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';
export const KCM = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
export const KUBELET_FLAGS = '/var/lib/kubelet/kubeadm-flags.env';

export const kubeletNoCloud = (text: string): string => text.replace(/--cloud-(provider|config)=\S+ /g, '');

export interface Edit {
  readonly group: string;
  readonly file: string;
  readonly edit: (text: string) => string;
}

/** The aws-mini fixture with host files edited and top-level fields replaced. */
export async function miniSpec(opts: { edits?: readonly Edit[]; overrides?: Partial<TwinSpec> } = {}) {
  const spec = await loadTwinSpec(AWS_MINI);
  const nodeGroups = spec.nodeGroups.map((g) => {
    const files = { ...g.files };
    for (const e of opts.edits ?? []) {
      if (e.group === g.name) files[e.file] = e.edit(files[e.file] ?? '');
    }
    return { ...g, files };
  });
  return parseTwinSpec({ ...spec, nodeGroups, ...opts.overrides });
}

export interface Harness {
  readonly ctx: TwinContext;
  readonly store: ObjectStore;
  readonly faults: Faults;
  readonly cloud: CloudModel;
  readonly nodes: NodeSimulation;
  readonly stateDir: string;
  read(node: string, file: string): Promise<string>;
  write(node: string, file: string, text: string): Promise<void>;
  node(name: string): KubeObject | undefined;
  pod(namespace: string, name: string): KubeObject | undefined;
  /** Stop the simulation; the state dir stays for a restart until `cleanup`. */
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function startHarness(spec: TwinSpec, stateDir?: string): Promise<Harness> {
  const dir = stateDir ?? (await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-nodes-test-')));
  const abort = new AbortController();
  const store = new ObjectStore();
  const faults = new Faults(spec.faults);
  const ctx: TwinContext = {
    spec,
    store,
    stateDir: dir,
    faults,
    signal: abort.signal,
    startedAt: Date.now(),
  };
  const cloud = new CloudModel(spec);
  const nodes = await startNodes(ctx, cloud);
  const stop = async (): Promise<void> => {
    abort.abort();
    await nodes.stop();
  };
  return {
    ctx,
    store,
    faults,
    cloud,
    nodes,
    stateDir: dir,
    read: (node, file) => readFile(hostPath(dir, node, file), 'utf8'),
    write: (node, file, text) => writeFile(hostPath(dir, node, file), text),
    node: (name) => store.tryGet('nodes', undefined, name),
    pod: (namespace, name) => store.tryGet('pods', namespace, name),
    stop,
    cleanup: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Poll until `check` gives something other than undefined/false, or fail naming what was awaited. */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

type Conditions = { status?: { conditions?: { type: string; status: string; reason?: string }[] } };

export function condition(obj: unknown, type: string): { status: string; reason?: string } | undefined {
  return (obj as Conditions | undefined)?.status?.conditions?.find((c) => c.type === type);
}

export function isReady(obj: unknown): boolean {
  return condition(obj, 'Ready')?.status === 'True';
}

// biome-ignore lint/suspicious/noExplicitAny: tests read deep status fields of plain objects
export type Loose = any;

/** A node agent pod as the agent Job's is (the label the twin runs in-process), with `request` in its env. */
export function agentPod(node: string, namespace: string, request: unknown): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'agent', namespace, labels: { 'app.kubernetes.io/name': AGENT_NAME } },
    spec: {
      nodeName: node,
      restartPolicy: 'Never',
      containers: [
        {
          name: 'agent',
          image: 'node:22-alpine',
          env: [{ name: AGENT_REQUEST_ENV, value: JSON.stringify(request) }],
        },
      ],
    },
  };
}
