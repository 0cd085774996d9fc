/**
 * Static pod manifests as the kubelet's file source reads them (pkg/kubelet/config/file.go, common.go):
 * every regular, non-hidden file directly in the static pod directory, whatever its extension, decoded
 * as one Pod; applyDefaults names it `<name>-<node>`, puts it in its manifest's namespace ("default" when
 * none), hashes it into kubernetes.io/config.hash and adds a NoExecute toleration for all taints. Its
 * mirror pod carries kubernetes.io/config.mirror and an ownerReference to the Node
 * (pkg/kubelet/pod/mirror_client.go).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { KubeObject } from '../store.ts';
import { kubernetesMinor } from '../workloads/objects.ts';
import { type Binary, startProblem } from './binary-start.ts';
import { readCommandLine } from './command-line.ts';

export const CONFIG_HASH = 'kubernetes.io/config.hash';
export const CONFIG_MIRROR = 'kubernetes.io/config.mirror';
export const CONFIG_SOURCE = 'kubernetes.io/config.source';
export const CONFIG_SEEN = 'kubernetes.io/config.seen';

/** The priority classes static pods name, with the values the Priority admission plugin sets. */
const PRIORITY_CLASSES: Readonly<Record<string, number>> = {
  'system-node-critical': 2_000_001_000,
  'system-cluster-critical': 2_000_000_000,
};

interface ManifestContainer {
  name: string;
  command?: string[];
  args?: string[];
  [field: string]: unknown;
}

/** One static pod as the kubelet runs it. */
export interface StaticPod {
  /** Absolute host path of its manifest. */
  readonly file: string;
  /** `kubernetes.io/config.hash`: changes with the manifest's content. */
  readonly hash: string;
  readonly namespace: string;
  /** The mirror pod's name, `<name>-<node>`. */
  readonly name: string;
  /** The mirror pod to create (without status and owner). */
  readonly mirror: KubeObject;
  /** Whether it is a kube-apiserver (the twin's API answers while one is Ready). */
  readonly apiServer: boolean;
  /** The port a kube-apiserver serves on, its node's own address (--secure-port, 6443 by default). */
  readonly securePort?: number;
  /** The error its binary exits with, when its flags are invalid for the cluster version. */
  readonly problem?: string;
}

/** Whether the file source reads this directory entry (file.go skips names starting with a dot). */
export function isManifestName(name: string): boolean {
  return !name.startsWith('.');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A JSON text with object keys sorted: the same pod hashes the same whatever its key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const COMPONENTS: readonly Binary[] = ['kube-apiserver', 'kube-controller-manager'];

/** The control-plane binary a container runs, by its command or its name. */
export function containerComponent(c: { name: string; command?: readonly string[] }): Binary | undefined {
  const binary = c.command?.[0] ? path.posix.basename(c.command[0]) : undefined;
  return COMPONENTS.find((k) => k === binary || k === c.name);
}

/** The first container whose flags its binary refuses at this version, with the binary's error. */
function flagProblem(containers: readonly ManifestContainer[], version: string): string | undefined {
  for (const c of containers) {
    const component = containerComponent(c);
    if (!component) continue;
    const problem = startProblem(
      component,
      kubernetesMinor(version),
      readCommandLine([...(c.command ?? []), ...(c.args ?? [])]).flags,
    );
    if (problem) return problem;
  }
  return undefined;
}

/** The manifest decoded as a Pod the kubelet accepts, or undefined (file.go logs and skips such a file). */
function decode(text: string): Record<string, unknown> | undefined {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch {
    return undefined;
  }
  if (!isRecord(doc) || doc.kind !== 'Pod' || doc.apiVersion !== 'v1') return undefined;
  const meta = doc.metadata;
  const spec = doc.spec;
  if (!isRecord(meta) || typeof meta.name !== 'string' || meta.name === '' || !isRecord(spec))
    return undefined;
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) return undefined;
  if (!containers.every((c) => isRecord(c) && typeof c.name === 'string' && c.name !== '')) return undefined;
  return doc;
}

/**
 * Read a static pod manifest for a node, or undefined when it is not a Pod. `file` is the manifest's
 * absolute host path, `version` the cluster's Kubernetes version.
 */
export function parseStaticPod(
  text: string,
  file: string,
  node: string,
  version: string,
): StaticPod | undefined {
  const doc = decode(text);
  if (!doc) return undefined;
  // The hash covers the pod, the node and the file, as applyDefaults' md5 does.
  const hash = createHash('md5')
    .update(`${canonical(doc)}host:${node}file:${file}`)
    .digest('hex');
  const meta = doc.metadata as Record<string, unknown>;
  const spec = structuredClone(doc.spec) as Record<string, unknown> & { containers: ManifestContainer[] };
  const namespace = typeof meta.namespace === 'string' && meta.namespace ? meta.namespace : 'default';
  const name = `${meta.name as string}-${node}`;
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations : [];
  const priorityClass = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : undefined;
  const labels = isRecord(meta.labels) ? (meta.labels as Record<string, string>) : undefined;
  const annotations = isRecord(meta.annotations) ? (meta.annotations as Record<string, string>) : {};
  const mirror: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      ...(labels ? { labels: { ...labels } } : {}),
      annotations: {
        ...annotations,
        [CONFIG_HASH]: hash,
        [CONFIG_MIRROR]: hash,
        [CONFIG_SEEN]: new Date().toISOString(),
        [CONFIG_SOURCE]: 'file',
      },
    },
    spec: {
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      enableServiceLinks: true,
      ...spec,
      containers: spec.containers.map((c) => ({
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        ...c,
      })),
      nodeName: node,
      tolerations: [...tolerations, { operator: 'Exists', effect: 'NoExecute' }],
      ...(spec.priority === undefined && priorityClass && PRIORITY_CLASSES[priorityClass] !== undefined
        ? { priority: PRIORITY_CLASSES[priorityClass] }
        : {}),
    },
  };
  const problem = flagProblem(spec.containers, version);
  const apiServer = runsApiServer(meta.name as string, labels, spec.containers);
  return {
    file,
    hash,
    namespace,
    name,
    mirror,
    apiServer,
    ...(apiServer ? { securePort: securePort(spec.containers) } : {}),
    ...(problem ? { problem } : {}),
  };
}

/** kube-apiserver's --secure-port (its default, 6443, when absent or not a port). */
function securePort(containers: readonly ManifestContainer[]): number {
  const c = containers.find((k) => containerComponent(k) === 'kube-apiserver');
  const port = Number(readCommandLine([...(c?.command ?? []), ...(c?.args ?? [])]).flags.get('secure-port'));
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : 6443;
}

/** Whether a pod runs kube-apiserver: by its name, its `component` label or a container. */
function runsApiServer(
  name: string,
  labels: Record<string, string> | undefined,
  containers: ManifestContainer[],
): boolean {
  return (
    name === 'kube-apiserver' ||
    labels?.component === 'kube-apiserver' ||
    containers.some((c) => containerComponent(c) === 'kube-apiserver')
  );
}
