/**
 * `npm start` (`ccm-migrate demo`): the main job on its embedded default. Start the example AWS twin, run
 * the upgrade on it exactly as against a real cluster (through the kubeconfig the twin writes), print the
 * summary and what the twin's invariant monitor saw, and stop.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { clientsFromKubeconfigFile } from '../kube/clients.ts';
import { LocalRunStore } from '../store/local-store.ts';
import { nodeNames, type TwinSpec } from '../twin/spec.ts';
import { startTwin } from '../twin/twin.ts';
import { CliError } from './exit-codes.ts';
import { migrationCommand } from './migration.ts';

export interface DemoOptions {
  readonly spec: TwinSpec;
  readonly stateDir?: string;
  readonly maxUnavailable: number;
  /** Run the twin on a real kube-apiserver. */
  readonly realApi?: boolean;
  readonly out?: NodeJS.WritableStream;
}

export async function demo(opts: DemoOptions): Promise<void> {
  const out = opts.out ?? process.stdout;
  const stateDir =
    opts.stateDir ?? (await mkdtemp(path.join(os.tmpdir(), `ccm-migrate-demo-${opts.spec.name}-`)));
  const nodes = opts.spec.nodeGroups.reduce((n, g) => n + nodeNames(g).length, 0);
  out.write(
    `starting twin "${opts.spec.name}": Kubernetes ${opts.spec.kubernetesVersion}, in-tree ${opts.spec.cloud.provider}, ${nodes} nodes${opts.realApi ? ', on a real kube-apiserver' : ''} (state in ${stateDir})\n`,
  );
  const twin = await startTwin({
    spec: opts.spec,
    stateDir: path.join(stateDir, 'twin'),
    realApi: opts.realApi ?? false,
  });
  let broken = 0;
  try {
    await migrationCommand({
      kind: 'upgrade',
      clients: clientsFromKubeconfigFile(twin.kubeconfigPath),
      store: new LocalRunStore(path.join(stateDir, 'runs')),
      clusterId: opts.spec.name,
      maxUnavailable: opts.maxUnavailable,
      options: {},
      yes: true,
      out,
    });
  } finally {
    await twin.monitor.stop();
    const violations = twin.monitor.violations();
    const count = (kind: string): number => violations.filter((v) => v.kind === kind).length;
    broken =
      count('uninitialized-without-cloud-controller') +
      count('two-cloud-controllers') +
      count('two-node-ipams') +
      count('node-deleted');
    out.write(
      [
        'invariants (twin monitor):',
        `  intervals with a tainted node and no cloud controller: ${count('uninitialized-without-cloud-controller')}`,
        `  intervals with two cloud controllers:                  ${count('two-cloud-controllers')}`,
        `  intervals with two node IPAM controllers:              ${count('two-node-ipams')}`,
        `  intervals with the API unavailable:                    ${count('api-unavailable')}`,
        `  Nodes deleted:                                         ${count('node-deleted')}`,
        `  details: ${path.join(twin.stateDir, 'invariants.jsonl')}`,
        '',
      ].join('\n'),
    );
    await twin.stop();
  }
  if (broken > 0) throw new CliError(`the twin recorded ${broken} cloud-controller invariant violation(s)`);
}
