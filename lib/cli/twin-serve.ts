/**
 * `ccm-migrate twin serve`: run a twin in the foreground until SIGINT/SIGTERM.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { nodeNames, type TwinSpec } from '../twin/spec.ts';
import { type RunningTwin, startTwin } from '../twin/twin.ts';

export interface ServeOptions {
  readonly spec: TwinSpec;
  /** A fresh temporary directory when absent. */
  readonly stateDir?: string;
  readonly port?: number;
  /** Serve it from a real kube-apiserver and etcd (`npm run setup:kube` builds them). */
  readonly realApi?: boolean;
  readonly out?: NodeJS.WritableStream;
}

function describe(twin: RunningTwin): string {
  const groups = twin.spec.nodeGroups.map((g) => `${nodeNames(g).length} ${g.role}`).join(', ');
  return [
    `twin "${twin.spec.name}" is up: Kubernetes ${twin.spec.kubernetesVersion}, ${twin.spec.cloud.provider} in ${twin.spec.cloud.region}, ${groups} node(s)`,
    twin.realApi
      ? `  API server:  ${twin.url} (a real kube-apiserver ${twin.realApi.version} and etcd; this address is the twin's proxy, which adds availability and faults)`
      : `  API server:  ${twin.url} (the twin's in-process API server)`,
    `  kubeconfig:  ${twin.kubeconfigPath}`,
    ...Object.entries(twin.nodeKubeconfigPaths).map(
      ([node, file]) =>
        `               ${file} (through ${node} alone: down while its kube-apiserver restarts)`,
    ),
    `  state dir:   ${twin.stateDir} (node files under nodes/<node>/, violations in invariants.jsonl)`,
    '',
    'Try:',
    `  export KUBECONFIG=${twin.kubeconfigPath}`,
    '  kubectl get nodes',
    '  kubectl get pods -n kube-system',
    '',
    'Press Ctrl-C to stop.',
  ].join('\n');
}

/** Start the twin, print how to reach it, and resolve once a signal has stopped it. */
export async function serveTwin(opts: ServeOptions): Promise<void> {
  const out = opts.out ?? process.stdout;
  const stateDir =
    opts.stateDir ?? (await mkdtemp(path.join(os.tmpdir(), `ccm-migrate-twin-${opts.spec.name}-`)));
  out.write(
    `starting twin "${opts.spec.name}" in ${stateDir}${opts.realApi ? ' on a real kube-apiserver' : ''} …\n`,
  );
  const twin = await startTwin({
    spec: opts.spec,
    stateDir,
    realApi: opts.realApi ?? false,
    ...(opts.port !== undefined ? { port: opts.port } : {}),
  });
  out.write(`${describe(twin)}\n`);
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      out.write(`\n${signal}: stopping the twin …\n`);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      twin.stop().then(resolve, resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  out.write('twin stopped\n');
}
