/**
 * What a migrated cluster's CCM runs with, read from its workload: kube-controller-manager no longer names
 * the cloud config once external, so `plan`, and an upgrade run again on a migrated cluster, render the CCM
 * from what the run that migrated it deployed.
 */
import type { V1DaemonSet, V1Deployment } from '@kubernetes/client-node';
import { parseFlags } from '../controlplane/flags.ts';
import { OPENSTACK_CREDENTIALS_DIR } from '../controlplane/openstack-cloud-config.ts';
import type { KubeClients } from '../kube/clients.ts';
import { call, orNotFound } from '../kube/errors.ts';
import { ccmNodeNetwork } from '../providers/node-network.ts';
import { ccmDeploymentRef } from '../providers/render.ts';
import type { CcmSource } from './ccm.ts';

/**
 * What a migrated cluster's CCM runs with that its kube-controller-manager no longer shows: the cloud config
 * it mounts, with the credentials Secret when it mounts a translated copy, and the routes and node IPAM it
 * took over. What the run that migrated it rendered.
 */
export async function deployedCcm(
  clients: KubeClients,
  source: CcmSource,
): Promise<Pick<CcmSource, 'cloudConfigTranslation' | 'deployedCloudConfig' | 'nodeNetwork'>> {
  const { namespace, name } = ccmDeploymentRef(source.provider);
  const kind = source.ccmWorkload === 'daemonset' ? 'DaemonSet' : 'Deployment';
  const ref = { apiVersion: 'apps/v1', kind, metadata: { name, namespace } };
  const deployed = await orNotFound(
    call(`read ${kind} ${name}`, async () => (await clients.objects.read(ref)) as V1Deployment | V1DaemonSet),
  );
  const pod = deployed?.spec?.template.spec;
  const flags = parseFlags(pod?.containers.flatMap((c) => c.args ?? []) ?? []);
  const nodeNetwork = pod ? { nodeNetwork: ccmNodeNetwork(flags, source.nodeNetwork) } : {};
  const path = flags.get('cloud-config');
  if (path === undefined) return nodeNetwork;
  const mount = pod?.containers
    .flatMap((c) => c.volumeMounts ?? [])
    .find((m) => m.mountPath === OPENSTACK_CREDENTIALS_DIR);
  const secret = pod?.volumes?.find((v) => v.name === mount?.name)?.secret?.secretName;
  if (secret === undefined) return { ...nodeNetwork, deployedCloudConfig: path };
  return {
    ...nodeNetwork,
    cloudConfigTranslation: { target: path, credentialsSecret: { name: secret, namespace } },
  };
}
