/** `ccm-migrate plan`: print what an upgrade would change (a diff per node file and per object). */
import type { KubeClients } from '../kube/clients.ts';
import { planUpgrade, type UpgradePlan } from '../local/plan.ts';
import { describeImage } from '../providers/image-overrides.ts';
import { describeAddressChanges } from '../steps/address-plan.ts';
import { pinnedNote } from '../steps/endpoint.ts';
import { credentialsNote } from '../steps/image-credentials.ts';
import { pinNote } from '../steps/preflight.ts';
import type { UpgradeOptions } from '../steps/schemas.ts';
import { describeStorage, missingCsiDrivers } from '../steps/storage.ts';

export function renderPlan(clusterId: string, server: string, plan: UpgradePlan): string {
  const e = plan.examination;
  const lines = [
    `plan for cluster ${clusterId} at ${server}`,
    `  Kubernetes ${e.kubernetesVersion}, provider ${e.provider}, --cluster-name ${e.clusterName}`,
    `  control plane ${e.controlPlaneNodes.join(', ')}; ${e.workerNodes.length} worker(s)`,
    ...plan.images.map((i) => `  image ${describeImage(i)}`),
    `  agent image ${plan.agentImage}`,
    `  leader migration ${plan.leaderMigration.enabled ? 'on' : 'off'}: ${plan.leaderMigration.reason}`,
    '',
  ];
  const endpoint = e.endpoint && pinnedNote(e.endpoint);
  const credentials = credentialsNote(e.imageCredentials, e.kubernetesVersion);
  const notes = [plan.action, pinNote(e), endpoint, credentials];
  lines.push(...notes.filter((l) => l !== undefined), '');
  const nodes = e.controlPlaneNodes.length + e.workerNodes.length;
  lines.push(...describeAddressChanges(plan.addresses, nodes), '');
  const missing = missingCsiDrivers(e.storage);
  lines.push(
    'storage (in-tree volumes are served by their CSI driver before and after the move):',
    ...describeStorage(e.storage).map((l) => `  ${l}`),
    ...(missing.length > 0
      ? [`  an upgrade refuses (unless --allow-missing-csi): ${missing.join('; ')}`]
      : []),
    '',
  );
  lines.push(`node files (${plan.files.length} to change):`);
  for (const f of plan.files) lines.push(`--- ${f.node}:${f.path}`, f.diff.trimEnd(), '');
  lines.push(`objects (server-side apply, field manager ccm-migrate):`);
  for (const o of plan.objects) {
    lines.push(`  ${o.action.padEnd(9)} ${o.object}`);
    if (o.diff && o.action === 'update') lines.push(o.diff.trimEnd());
  }
  lines.push('', 'nothing was changed.');
  return `${lines.join('\n')}\n`;
}

export async function planCommand(cmd: {
  clients: KubeClients;
  clusterId: string;
  options: UpgradeOptions;
  agentImage?: string;
  out?: NodeJS.WritableStream;
}): Promise<UpgradePlan> {
  const plan = await planUpgrade({
    clients: cmd.clients,
    options: cmd.options,
    ...(cmd.agentImage ? { agentImage: cmd.agentImage } : {}),
  });
  (cmd.out ?? process.stdout).write(renderPlan(cmd.clusterId, cmd.clients.server, plan));
  return plan;
}
