import { createHash } from 'node:crypto';
import type { V1DaemonSet, V1Deployment, V1Secret } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, UnsupportedProviderError } from '../../lib/errors.ts';
import { providerFacts } from '../../lib/providers/catalog.ts';
import {
  CCM_LABEL_SELECTOR,
  CCM_LABELS,
  ccmDeploymentRef,
  isStagedCcm,
  type KubeObject,
  type RenderInput,
  renderCcmObjects,
  runsNodeLifecycle,
  STAGED_NODE_SELECTOR,
} from '../../lib/providers/render.ts';
import { withLeaderMigration } from '../../lib/steps/leader-migration.ts';

const BASE: RenderInput = {
  provider: 'aws',
  kubernetesVersion: 'v1.26.15',
  clusterName: 'prod-eu',
  replicas: 2,
};
const CLOUD_CONF = '[Global]\nKubernetesClusterID = prod-eu\n';

const deploymentOf = (objects: KubeObject[]) =>
  objects.find((o) => o.kind === 'Deployment') as unknown as V1Deployment;
const containerOf = (objects: KubeObject[]) =>
  deploymentOf(objects).spec?.template.spec?.containers.find((c) => c.name === 'cloud-controller-manager');

describe('renderCcmObjects without the node-lifecycle controller', () => {
  const controllers = (objects: KubeObject[], container = 'cloud-controller-manager') =>
    (
      deploymentOf(objects).spec?.template.spec?.containers.find((c) => c.name === container)?.args ?? []
    ).filter((a) => a.startsWith('--controllers'));

  it('turns it off after what the provider’s list keeps or turns off, and leaves the list alone otherwise', () => {
    expect(controllers(renderCcmObjects({ ...BASE, nodeLifecycle: false }))).toEqual([
      '--controllers=*,-cloud-node-lifecycle',
    ]);
    expect(controllers(renderCcmObjects(BASE))).toEqual([]);
    const azure = {
      ...BASE,
      provider: 'azure' as const,
      kubernetesVersion: 'v1.30.4',
      cloudConfigHostPath: '/etc/kubernetes/azure.json',
    };
    expect(controllers(renderCcmObjects({ ...azure, nodeLifecycle: false }))).toEqual([
      '--controllers=*,-cloud-node,-cloud-node-lifecycle',
    ]);
    expect(controllers(renderCcmObjects(azure))).toEqual(['--controllers=*,-cloud-node']);
  });

  it('is read back from the args it renders', () => {
    for (const nodeLifecycle of [true, false]) {
      const args = containerOf(renderCcmObjects({ ...BASE, nodeLifecycle }))?.args ?? [];
      expect(runsNodeLifecycle(args)).toBe(nodeLifecycle);
    }
    expect(runsNodeLifecycle(['--controllers=cloud-node-lifecycle-controller,-cloud-node-lifecycle'])).toBe(
      true,
    );
    expect(runsNodeLifecycle(['--controllers=*,-cloud-node-lifecycle-controller'])).toBe(false);
  });
});

describe('renderCcmObjects (AWS)', () => {
  it('gives every object its apiVersion, kind, name and ccm-migrate’s label, RBAC before the workload', () => {
    const objects = renderCcmObjects(BASE);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ServiceAccount/cloud-controller-manager',
      'ClusterRole/system:cloud-controller-manager',
      'ClusterRoleBinding/system:cloud-controller-manager',
      'RoleBinding/cloud-controller-manager:apiserver-authentication-reader',
      'Deployment/aws-cloud-controller-manager',
    ]);
    for (const o of objects) {
      expect(o.apiVersion).toMatch(/^(v1|rbac\.authorization\.k8s\.io\/v1|apps\/v1)$/);
      expect(o.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('ccm-migrate');
    }
  });

  it('runs the image for the cluster’s minor with the cluster’s name and the replicas asked', () => {
    const objects = renderCcmObjects(BASE);
    const d = deploymentOf(objects);
    expect(d.metadata?.namespace).toBe('kube-system');
    expect(d.spec?.replicas).toBe(2);
    expect(containerOf(objects)?.image).toBe(
      'registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.14',
    );
    expect(containerOf(objects)?.args).toEqual([
      '--cloud-provider=aws',
      '--cluster-name=prod-eu',
      '--configure-cloud-routes=false',
      '--leader-elect=true',
      '--use-service-account-credentials=true',
      '--v=2',
    ]);
    expect(d.spec?.template.spec?.volumes).toBeUndefined();
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    expect(renderCcmObjects({ ...BASE, kubernetesVersion: 'v1.36.2' }).length).toBe(5);
    expect(containerOf(renderCcmObjects({ ...BASE, kubernetesVersion: 'v1.36.2' }))?.image).toMatch(
      /:v1\.35\.2$/,
    );
  });

  it('stages at zero replicas', () => {
    expect(deploymentOf(renderCcmObjects({ ...BASE, replicas: 0 })).spec?.replicas).toBe(0);
  });

  it('labels the workload so steps can find it, with a selector its pods match', () => {
    const d = deploymentOf(renderCcmObjects(BASE));
    const podLabels = d.spec?.template.metadata?.labels ?? {};
    expect(podLabels).toMatchObject(CCM_LABELS);
    expect(d.metadata?.labels).toMatchObject(CCM_LABELS);
    for (const [k, v] of Object.entries(d.spec?.selector.matchLabels ?? {})) expect(podLabels[k]).toBe(v);
    expect(CCM_LABEL_SELECTOR).toBe(
      'app.kubernetes.io/managed-by=ccm-migrate,app.kubernetes.io/component=cloud-controller-manager',
    );
    expect(ccmDeploymentRef('aws')).toEqual({ namespace: 'kube-system', name: d.metadata?.name });
  });

  it('tolerates the uninitialized and control-plane taints, and runs on control-plane nodes', () => {
    const pod = deploymentOf(renderCcmObjects(BASE)).spec?.template.spec;
    expect(pod?.tolerations).toEqual(
      expect.arrayContaining([
        { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
        { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
      ]),
    );
    expect(pod?.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
    expect(pod?.serviceAccountName).toBe('cloud-controller-manager');
  });

  it('carries a cloud config in a Secret, mounted and passed with --cloud-config, only when there is one', () => {
    const objects = renderCcmObjects({ ...BASE, cloudConfig: CLOUD_CONF });
    expect(objects.map((o) => o.kind).slice(-2)).toEqual(['Secret', 'Deployment']);
    const secret = objects.find((o) => o.kind === 'Secret') as unknown as V1Secret;
    expect(secret.metadata).toMatchObject({
      name: 'cloud-controller-manager-config',
      namespace: 'kube-system',
    });
    expect(Buffer.from(secret.data?.['cloud.conf'] ?? '', 'base64').toString('utf8')).toBe(CLOUD_CONF);
    const d = deploymentOf(objects);
    const container = containerOf(objects);
    expect(container?.args?.[0]).toBe('--cloud-config=/etc/kubernetes/cloud-config/cloud.conf');
    expect(container?.volumeMounts).toEqual([
      { name: 'cloud-config', mountPath: '/etc/kubernetes/cloud-config', readOnly: true },
    ]);
    expect(d.spec?.template.spec?.volumes).toEqual([
      { name: 'cloud-config', secret: { secretName: 'cloud-controller-manager-config' } },
    ]);
    // A new config must restart the pods, which a changed Secret alone does not.
    expect(d.spec?.template.metadata?.annotations?.['ccm-migrate/cloud-config-sha256']).toBe(
      createHash('sha256').update(CLOUD_CONF).digest('hex'),
    );
    // A blank file is no config.
    expect(renderCcmObjects({ ...BASE, cloudConfig: ' \n' })).toEqual(renderCcmObjects(BASE));
  });

  it('is deterministic, and a caller changing its result does not change the next one', () => {
    const first = renderCcmObjects({ ...BASE, cloudConfig: CLOUD_CONF });
    expect(renderCcmObjects({ ...BASE, cloudConfig: CLOUD_CONF })).toEqual(first);
    const snapshot = structuredClone(first);
    const d = deploymentOf(first);
    d.spec?.template.spec?.containers[0]?.args?.push('--oops');
    (first[0] as KubeObject).metadata.name = 'changed';
    expect(renderCcmObjects({ ...BASE, cloudConfig: CLOUD_CONF })).toEqual(snapshot);
  });

  it('refuses bad input and unsupported providers or versions', () => {
    for (const bad of [
      { ...BASE, clusterName: '' },
      { ...BASE, clusterName: 'my cluster' },
      { ...BASE, replicas: -1 },
      { ...BASE, replicas: 1.5 },
      { ...BASE, provider: 'digitalocean' as never },
    ]) {
      expect(() => renderCcmObjects(bad)).toThrow(InvalidInputError);
    }
    expect(() =>
      renderCcmObjects({ ...BASE, provider: 'ibm', kubernetesVersion: 'v1.33.0', cloudConfig: 'x' }),
    ).toThrow(UnsupportedProviderError);
    expect(() => renderCcmObjects({ ...BASE, kubernetesVersion: 'v1.37.0' })).toThrow(
      UnsupportedProviderError,
    );
  });
});

describe('renderCcmObjects (every provider)', () => {
  const CONFIG = '[Global]\nauth-url = https://keystone.example:5000/v3\n';
  const VERSIONS = {
    aws: 'v1.26.15',
    azure: 'v1.29.4',
    gcp: 'v1.30.4',
    vsphere: 'v1.29.4',
    openstack: 'v1.25.16',
    ibm: 'v1.31.2',
  } as const;
  const all = Object.entries(VERSIONS) as [keyof typeof VERSIONS, string][];

  it.each(all)(
    '%s: one control-plane Deployment, critical, requests without limits, spread by host',
    (provider, v) => {
      const objects = renderCcmObjects({ ...BASE, provider, kubernetesVersion: v, cloudConfig: CONFIG });
      const d = deploymentOf(objects);
      const pod = d.spec?.template.spec;
      expect(d.metadata?.name).toBe(ccmDeploymentRef(provider).name);
      expect(pod?.priorityClassName).toBe('system-cluster-critical');
      expect(pod?.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
      expect(pod?.tolerations).toEqual(
        expect.arrayContaining([
          { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
        ]),
      );
      const anti = pod?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.[0];
      expect(anti?.topologyKey).toBe('kubernetes.io/hostname');
      expect(anti?.labelSelector?.matchLabels).toEqual(d.spec?.selector.matchLabels);
      for (const c of pod?.containers ?? []) {
        expect(c.resources?.requests).toBeDefined();
        expect(c.resources?.limits).toBeUndefined();
      }
      const args = containerOf(objects)?.args ?? [];
      expect(args).toContain(`--cluster-name=${BASE.clusterName}`);
      expect(args).toContain(
        `--cloud-config=/etc/kubernetes/cloud-config/${providerFacts(provider).cloudConfigFile}`,
      );
      // Leader election: on by default in every CCM, and never turned off here.
      expect(args).not.toContain('--leader-elect=false');
      for (const o of objects) {
        if (o.metadata.namespace !== undefined) expect(o.metadata.namespace).toBe('kube-system');
      }
    },
  );

  it('refuses to render a CCM that cannot start without the cluster’s cloud config', () => {
    for (const provider of ['azure', 'vsphere', 'openstack', 'ibm'] as const) {
      expect(() => renderCcmObjects({ ...BASE, provider, kubernetesVersion: VERSIONS[provider] })).toThrow(
        /needs the cluster's cloud config/,
      );
    }
    expect(() => renderCcmObjects({ ...BASE, provider: 'gcp', kubernetesVersion: 'v1.30.4' })).not.toThrow();
  });

  it('mounts the in-tree cloud config from its control-plane host path instead, with no Secret', () => {
    const objects = renderCcmObjects({
      ...BASE,
      provider: 'openstack',
      kubernetesVersion: VERSIONS.openstack,
      cloudConfigHostPath: '/etc/kubernetes/cloud.conf',
    });
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    expect(containerOf(objects)?.args).toContain('--cloud-config=/etc/kubernetes/cloud.conf');
    expect(containerOf(objects)?.volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: '/etc/kubernetes/cloud.conf', readOnly: true }),
    );
    expect(deploymentOf(objects).spec?.template.spec?.volumes).toContainEqual(
      expect.objectContaining({ hostPath: { path: '/etc/kubernetes/cloud.conf', type: 'File' } }),
    );
    expect(() =>
      renderCcmObjects({
        ...BASE,
        cloudConfig: CLOUD_CONF,
        cloudConfigHostPath: '/etc/kubernetes/cloud.conf',
      }),
    ).toThrow(InvalidInputError);
  });

  it('runs Azure’s cloud-node-manager DaemonSet of the CCM’s minor, the CCM without its cloud-node loop', () => {
    const objects = renderCcmObjects({
      ...BASE,
      provider: 'azure',
      kubernetesVersion: 'v1.29.4',
      cloudConfig: '{}',
    });
    const ds = objects.find((o) => o.kind === 'DaemonSet') as unknown as V1DaemonSet;
    expect(ds.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('ccm-migrate');
    expect(ds.spec?.template.spec?.containers[0]?.image).toBe(
      'mcr.microsoft.com/oss/kubernetes/azure-cloud-node-manager:v1.29.15',
    );
    expect(containerOf(objects)?.args).toContain('--controllers=*,-cloud-node');
    // Borrowing 1.36's CCM for 1.37 would be refused; 1.33 has both images under oss/v2.
    const v133 = renderCcmObjects({
      ...BASE,
      provider: 'azure',
      kubernetesVersion: 'v1.33.0',
      cloudConfig: '{}',
    });
    expect(
      (v133.find((o) => o.kind === 'DaemonSet') as unknown as V1DaemonSet).spec?.template.spec?.containers[0]
        ?.image,
    ).toBe('mcr.microsoft.com/oss/v2/kubernetes/azure-cloud-node-manager:v1.33.12');
  });

  it('honours image overrides by container name, and refuses one for a container that is not there', () => {
    const images = {
      'cloud-controller-manager': 'mirror.corp/azure-ccm:v1.29.15',
      'cloud-node-manager': 'mirror.corp/azure-cnm:v1.29.15',
    };
    const objects = renderCcmObjects({
      ...BASE,
      provider: 'azure',
      kubernetesVersion: 'v1.29.4',
      cloudConfig: '{}',
      images,
    });
    expect(containerOf(objects)?.image).toBe(images['cloud-controller-manager']);
    const ds = objects.find((o) => o.kind === 'DaemonSet') as unknown as V1DaemonSet;
    expect(ds.spec?.template.spec?.containers[0]?.image).toBe(images['cloud-node-manager']);
    expect(() => renderCcmObjects({ ...BASE, images: { 'cloud-node-manager': 'x/y:z' } })).toThrow(
      InvalidInputError,
    );
    expect(() => renderCcmObjects({ ...BASE, images: { 'cloud-controller-manager': 'has space' } })).toThrow(
      InvalidInputError,
    );
  });

  it('gives the CCM 10 node-sync workers where its binary takes the flag: 1.27 on, not Azure, not an override', () => {
    const syncs = (input: Partial<RenderInput>) =>
      (containerOf(renderCcmObjects({ ...BASE, cloudConfig: CLOUD_CONF, ...input }))?.args ?? []).filter(
        (a) => a.startsWith('--concurrent-node-syncs'),
      );
    const ten = ['--concurrent-node-syncs=10'];
    // k8s.io/cloud-provider v0.27 brought the flag: a 1.26 CCM would exit on it.
    expect(syncs({ provider: 'aws', kubernetesVersion: 'v1.26.15' })).toEqual([]);
    expect(syncs({ provider: 'aws', kubernetesVersion: 'v1.27.3' })).toEqual(ten);
    expect(syncs({ provider: 'openstack', kubernetesVersion: 'v1.25.16' })).toEqual([]);
    for (const provider of ['gcp', 'vsphere', 'ibm', 'openstack'] as const) {
      expect(syncs({ provider, kubernetesVersion: 'v1.29.4' }), provider).toEqual(ten);
    }
    // Azure's binary registers no node controller flags (its cloud-node-manager initialises the nodes).
    expect(syncs({ provider: 'azure', kubernetesVersion: 'v1.29.4', cloudConfig: '{}' })).toEqual([]);
    // An override may be any build: it keeps the default.
    const images = { 'cloud-controller-manager': 'mirror.corp/gcp-ccm:v29.0.0' };
    expect(syncs({ provider: 'gcp', kubernetesVersion: 'v1.29.4', images })).toEqual([]);
  });

  it('lets the GCP CCM take CloudAllocator node IPAM over (and no other provider’s)', () => {
    const base = { ...BASE, provider: 'gcp' as const, kubernetesVersion: 'v1.30.4' };
    expect(containerOf(renderCcmObjects(base))?.args).toContain('--controllers=*,-nodeipam');
    const nodeNetwork = { cloudRoutes: false, nodeIpam: 'cloud', clusterCidr: '192.168.0.0/16' } as const;
    const args = containerOf(renderCcmObjects({ ...base, nodeNetwork }))?.args;
    expect(args).toEqual(
      expect.arrayContaining([
        '--allocate-node-cidrs=true',
        '--cidr-allocator-type=CloudAllocator',
        '--cluster-cidr=192.168.0.0/16',
        '--configure-cloud-routes=false',
        '--controllers=*',
      ]),
    );
    expect(() => renderCcmObjects({ ...BASE, nodeNetwork })).toThrow(
      /AWS cloud-controller-manager does not take node IPAM over/,
    );
  });

  it('carries kube-controller-manager’s cloud routes over, and says no routes explicitly otherwise', () => {
    const routed = { cloudRoutes: true, nodeIpam: 'range', clusterCidr: '10.244.0.0/16' } as const;
    const args = containerOf(renderCcmObjects({ ...BASE, nodeNetwork: routed }))?.args;
    expect(args).toEqual(
      expect.arrayContaining(['--configure-cloud-routes=true', '--cluster-cidr=10.244.0.0/16']),
    );
    // The range allocator stays in KCM: the CCM is not told to allocate.
    expect(args?.some((a) => a.startsWith('--allocate-node-cidrs'))).toBe(false);
    const azure = { ...BASE, provider: 'azure' as const, kubernetesVersion: 'v1.29.4', cloudConfig: '{}' };
    expect(containerOf(renderCcmObjects({ ...azure, nodeNetwork: routed }))?.args).toEqual(
      expect.arrayContaining(['--allocate-node-cidrs=false', '--configure-cloud-routes=true']),
    );
    // The CCM's route controller defaults to on: a provider whose asset does not say so is told.
    const openstack = { ...BASE, provider: 'openstack' as const, kubernetesVersion: 'v1.25.16' };
    const none = containerOf(renderCcmObjects({ ...openstack, cloudConfig: '[Global]\n' }))?.args;
    expect(none).toContain('--configure-cloud-routes=false');
    expect(none?.some((a) => a.startsWith('--cluster-cidr'))).toBe(false);
  });
});

describe('renderCcmObjects as a DaemonSet (workload: daemonset)', () => {
  const CONFIG = '[Global]\nauth-url = https://keystone.example:5000/v3\n';
  const PROVIDER_INPUTS: [string, RenderInput][] = (
    [
      ['aws', 'v1.26.15'],
      ['azure', 'v1.29.4'],
      ['gcp', 'v1.30.4'],
      ['vsphere', 'v1.29.4'],
      ['openstack', 'v1.25.16'],
      ['ibm', 'v1.31.2'],
    ] as const
  ).map(([provider, kubernetesVersion]) => [
    provider,
    { ...BASE, provider, kubernetesVersion, cloudConfig: CONFIG },
  ]);
  const daemonSetOf = (objects: KubeObject[]) =>
    objects.find(
      (o) => o.kind === 'DaemonSet' && o.metadata.labels?.['app.kubernetes.io/component'],
    ) as unknown as V1DaemonSet;

  it.each(PROVIDER_INPUTS)(
    'runs %s’s CCM pod template as the Deployment’s, one pod per control-plane node',
    (_, input) => {
      const deployment = deploymentOf(renderCcmObjects(input));
      const objects = renderCcmObjects({ ...input, workload: 'daemonset' });
      expect(objects.some((o) => o.kind === 'Deployment')).toBe(false);
      const ds = daemonSetOf(objects);
      expect(ds.metadata).toEqual(deployment.metadata);
      expect(ds.apiVersion).toBe('apps/v1');
      expect(ds.spec?.selector).toEqual(deployment.spec?.selector);
      expect(ds.spec?.updateStrategy).toEqual({
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1 },
      });
      expect(ds.spec).not.toHaveProperty('replicas');
      const { affinity, ...pod } = deployment.spec?.template.spec ?? { containers: [] };
      const { podAntiAffinity, ...rest } = affinity ?? {};
      expect(podAntiAffinity).toBeDefined();
      // nodeSelector, tolerations, priority class, args, volumes: all the Deployment's.
      expect(ds.spec?.template.spec).toEqual({
        ...pod,
        ...(Object.keys(rest).length > 0 ? { affinity: rest } : {}),
      });
      expect(ds.spec?.template.spec?.priorityClassName).toBe('system-cluster-critical');
      expect(ds.spec?.template.spec?.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
      expect(ds.spec?.template.metadata).toEqual(deployment.spec?.template.metadata);
      // The other objects are the same either way.
      const others = (list: KubeObject[]) => list.filter((o) => o.metadata.name !== ds.metadata?.name);
      expect(others(objects)).toEqual(others(renderCcmObjects(input)));
    },
  );

  it('stages the DaemonSet on no node (it has no replicas to scale to zero)', () => {
    const staged = daemonSetOf(renderCcmObjects({ ...BASE, replicas: 0, workload: 'daemonset' }));
    const started = daemonSetOf(renderCcmObjects({ ...BASE, workload: 'daemonset' }));
    expect(staged.spec?.template.spec?.nodeSelector).toEqual({
      'node-role.kubernetes.io/control-plane': '',
      ...STAGED_NODE_SELECTOR,
    });
    expect(isStagedCcm('DaemonSet', staged.spec)).toBe(true);
    expect(isStagedCcm('DaemonSet', started.spec)).toBe(false);
    // Replicas mean nothing to a started DaemonSet.
    expect(renderCcmObjects({ ...BASE, replicas: 3, workload: 'daemonset' })).toEqual(
      renderCcmObjects({ ...BASE, replicas: 1, workload: 'daemonset' }),
    );
    expect(isStagedCcm('Deployment', deploymentOf(renderCcmObjects({ ...BASE, replicas: 0 })).spec)).toBe(
      true,
    );
    expect(isStagedCcm('Deployment', deploymentOf(renderCcmObjects(BASE)).spec)).toBe(false);
  });

  it('keeps the default a Deployment', () => {
    expect(renderCcmObjects({ ...BASE, workload: 'deployment' })).toEqual(renderCcmObjects(BASE));
    expect(() => renderCcmObjects({ ...BASE, workload: 'statefulset' as never })).toThrow(InvalidInputError);
  });

  it('puts leader migration on the CCM DaemonSet’s container only, not on Azure’s cloud-node-manager', () => {
    const objects = renderCcmObjects({
      provider: 'azure',
      kubernetesVersion: 'v1.29.4',
      clusterName: 'c',
      replicas: 1,
      cloudConfigHostPath: '/etc/kubernetes/azure.json',
      workload: 'daemonset',
    });
    const on = withLeaderMigration(objects as never, true) as unknown as KubeObject[];
    expect(containerOfDaemonSet(daemonSetOf(on))?.args).toContain('--enable-leader-migration=true');
    const nodeManager = (list: KubeObject[]) => list.find((o) => o.metadata.name === 'cloud-node-manager');
    expect(nodeManager(on)).toEqual(nodeManager(objects));
    const off = withLeaderMigration(on as never, false) as unknown as KubeObject[];
    expect(off).toEqual(objects);
  });
});

function containerOfDaemonSet(ds: V1DaemonSet) {
  return ds.spec?.template.spec?.containers.find((c) => c.name === 'cloud-controller-manager');
}
