/**
 * Test support for whole-twin tests: start a twin from a fixture (optionally with its host files edited),
 * reach it with the real @kubernetes/client-node through the kubeconfig it writes, and wait for conditions.
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { clientsFromKubeconfigFile, type KubeClients } from '../../lib/kube/clients.ts';
import { hostPath } from '../../lib/twin/context.ts';
import { loadTwinSpec, parseTwinSpec, type TwinSpec, type TwinSpecInput } from '../../lib/twin/spec.ts';
import { type RunningTwin, startTwin } from '../../lib/twin/twin.ts';

export const FIXTURES = {
  awsMini: fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url)),
  awsHaMini: fileURLToPath(new URL('../fixtures/twins/aws-ha-mini.yaml', import.meta.url)),
};

/** The kubeadm host files the tests read and edit. */
export const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';
export const KCM = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
export const KUBELET_FLAGS = '/var/lib/kubelet/kubeadm-flags.env';
export const CLOUD_CONF = '/etc/kubernetes/cloud.conf';

/**
 * A starter for the tests of one file: each twin it starts from a fixture is stopped after its test.
 * Call at the top level of the file.
 */
export function fixtureTwins(): (...args: Parameters<typeof fixtureSpec>) => Promise<TestTwin> {
  let running: TestTwin | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });
  return async (...args) => {
    running = await startTestTwin(await fixtureSpec(...args));
    return running;
  };
}

/** Node file edits a hand migration makes: cloud flags off a static pod, a kubelet flipped to external. */
export const dropCloudFlags = (text: string): string =>
  text.replace(/^ *- --cloud-(provider|config)=.*\n/gm, '');
export const kubeletExternal = (text: string): string =>
  text.replace('--cloud-provider=aws', '--cloud-provider=external').replace(/--cloud-config=\S+ /, '');

/** A host file edit applied to one node group of a spec before the twin starts. */
export interface FileEdit {
  readonly group: string;
  readonly file: string;
  readonly edit: (text: string) => string;
}

/** A fixture spec with host files edited and top-level fields replaced (version, faults, …). */
export async function fixtureSpec(
  fixture: string,
  opts: { edits?: readonly FileEdit[]; overrides?: Partial<TwinSpecInput> } = {},
): Promise<TwinSpec> {
  const spec = await loadTwinSpec(fixture);
  const nodeGroups = spec.nodeGroups.map((g) => {
    const files = { ...g.files };
    for (const e of opts.edits ?? []) {
      if (e.group !== g.name) continue;
      const text = files[e.file];
      if (text === undefined) throw new Error(`fixture group ${g.name} has no file ${e.file}`);
      files[e.file] = e.edit(text);
    }
    return { ...g, files };
  });
  return parseTwinSpec({ ...spec, nodeGroups, ...opts.overrides }, fixture);
}

/** A running twin and the clients the product itself would build from the kubeconfig it writes. */
export interface TestTwin extends KubeClients {
  readonly twin: RunningTwin;
  /** Read a node's host file. */
  readFile(node: string, file: string): Promise<string>;
  /** Write a node's host file, as an operator (or the node agent) would. */
  writeFile(node: string, file: string, text: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startTestTwin(
  spec: TwinSpec,
  opts: { readyTimeoutMs?: number; realApi?: boolean } = {},
): Promise<TestTwin> {
  const stateDir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-twin-test-'));
  const twin = await startTwin({
    spec,
    stateDir,
    readyTimeoutMs: opts.readyTimeoutMs ?? 10_000,
    realApi: opts.realApi ?? false,
  }).catch(async (err: unknown) => {
    await rm(stateDir, { recursive: true, force: true });
    throw err;
  });
  // A test that asked for the real server never quietly runs on the in-process one.
  if (opts.realApi && !(twin.realApi && twin.url.startsWith('https:'))) {
    await twin.stop();
    throw new Error('asked for a twin on a real kube-apiserver, got one on the in-process server');
  }
  return {
    twin,
    ...clientsFromKubeconfigFile(twin.kubeconfigPath),
    readFile: (node, file) => readFile(hostPath(stateDir, node, file), 'utf8'),
    writeFile: (node, file, text) => writeFile(hostPath(stateDir, node, file), text),
    stop: async () => {
      await twin.stop();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/**
 * Poll until `check` returns a value other than undefined/false (errors count as "not yet"), or fail with
 * the last error or value seen.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  opts: { timeoutMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 5_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out waiting for ${opts.what ?? 'a condition'} (last: ${why})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function isReady(obj: { status?: { conditions?: { type: string; status: string }[] } }): boolean {
  return obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
