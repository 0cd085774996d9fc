/** `ccm-migrate twin snapshot`: write a twin spec that reproduces a live cluster (lib/rehearse/snapshot.ts). */
import type { KubeClients } from '../kube/clients.ts';
import { newRunId } from '../local/migration.ts';
import { readOnlyAgent } from '../rehearse/agent.ts';
import { PLACEHOLDER_MARK } from '../rehearse/placeholders.ts';
import { type Snapshot, takeSnapshot } from '../rehearse/snapshot.ts';
import { writeSnapshotSpec } from '../rehearse/write-spec.ts';
import { parseTwinSpec } from '../twin/spec.ts';
import { CliError, EXIT } from './exit-codes.ts';

/** What every snapshot and rehearsal says before it starts. */
export const READ_ONLY_NOTE =
  'read-only: nothing in the cluster is changed; the only writes are the node agent’s ConfigMap (ccm-migrate-agent, as drift --deep applies it) and its Jobs, which read node files and are deleted once read';

export interface SnapshotCommand {
  readonly clients: KubeClients;
  readonly agentImage?: string;
  readonly out?: NodeJS.WritableStream;
}

/** Take the snapshot and check that it is a spec the twin takes; progress on `out`. */
export async function snapshotCluster(cmd: SnapshotCommand): Promise<Snapshot> {
  const out = cmd.out ?? process.stdout;
  out.write(`snapshot of the cluster at ${cmd.clients.server} (${READ_ONLY_NOTE})\n`);
  const snapshot = await takeSnapshot({
    clients: cmd.clients,
    agent: readOnlyAgent(cmd.clients, cmd.agentImage ? { agentImage: cmd.agentImage } : {}),
    runId: newRunId('snap'),
    onProgress: (m) => out.write(`  ${m}\n`),
  });
  parseTwinSpec(snapshot.spec, 'written by twin snapshot');
  return snapshot;
}

export function describeSnapshot(snapshot: Snapshot): string {
  const groups = snapshot.spec.nodeGroups ?? [];
  const nodes = groups.reduce((n, g) => n + (g.names?.length ?? 0), 0);
  const lines = [
    `  Kubernetes ${snapshot.spec.kubernetesVersion}, ${snapshot.spec.cloud.provider} in ${snapshot.spec.cloud.region}; ${nodes} node(s) in ${groups.length} group(s): ${groups.map((g) => `${g.name} (${g.names?.length} ${g.role})`).join(', ')}`,
    `  ${snapshot.spec.objects?.length ?? 0} API object(s) (kubeadm's ConfigMaps, LoadBalancer Services, storage: volumes, claims, StorageClasses, CSIDrivers, VolumeAttachments)`,
    `  placeholders (never read from the nodes): ${snapshot.placeholders.join(', ') || 'none'}`,
  ];
  return `${lines.join('\n')}\n`;
}

export async function twinSnapshotCommand(cmd: SnapshotCommand & { readonly file: string }): Promise<void> {
  const out = cmd.out ?? process.stdout;
  const snapshot = await snapshotCluster(cmd);
  const header = [
    `# A twin of the cluster at ${cmd.clients.server}, written by \`ccm-migrate twin snapshot\` on ${new Date().toISOString()}.`,
    '# Serve it with `ccm-migrate twin serve --spec <this file>`, or rehearse on it with `ccm-migrate rehearse`.',
    `# Files marked "${PLACEHOLDER_MARK}" were never read from the nodes (cloud configs, credential plugins).`,
    '# No Secret data, no certificate and no key is in it.',
    '',
  ].join('\n');
  const written = await writeSnapshotSpec(snapshot.spec, cmd.file, header).catch((err: unknown) => {
    throw new CliError(`cannot write ${cmd.file}: ${(err as Error).message}`, EXIT.badInput);
  });
  out.write(
    `${describeSnapshot(snapshot)}wrote ${cmd.file} and ${written.length - 1} host file(s) beside it (${snapshot.jobs} agent Job(s) run)\n`,
  );
}
