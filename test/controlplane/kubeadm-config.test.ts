/** The ClusterConfiguration kubeadm keeps in kube-system/kubeadm-config, changed as the manifests are. */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { clusterConfigurationArgs, editClusterConfiguration } from '../../lib/controlplane/kubeadm-config.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { TO_EXTERNAL_KUBEADM } from '../../lib/steps/edits.ts';

const ASSET = new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/api/kubeadm-config.yaml', import.meta.url);
const CAPG = '/work/shared/reference/kubeadm/capi-templates/capg-v1.10.0/cluster-template.yaml';

async function v1beta3(): Promise<string> {
  return (parse(await readFile(ASSET, 'utf8')) as { data: { ClusterConfiguration: string } }).data
    .ClusterConfiguration;
}

/** v1beta4 (kubeadm 1.31+) writes extraArgs as a list of {name, value}. */
const V1BETA4 = `apiServer:
  extraArgs:
  - name: authorization-mode
    value: Node,RBAC
  - name: cloud-provider
    value: gce
  - name: feature-gates
    value: DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false,Foo=true
apiVersion: kubeadm.k8s.io/v1beta4
controllerManager:
  extraArgs:
  - name: cloud-provider
    value: gce
kind: ClusterConfiguration
`;

describe('kubeadm ClusterConfiguration', () => {
  it('takes the in-tree provider out of a v1beta3 configuration, with its cloud-config volume, once', async () => {
    const original = await v1beta3();
    const once = editClusterConfiguration(original, TO_EXTERNAL_KUBEADM);
    expect(once.changed).toBe(true);
    expect(Object.fromEntries(clusterConfigurationArgs(once.text, 'apiServer'))).toEqual({
      'authorization-mode': 'Node,RBAC',
    });
    expect(Object.fromEntries(clusterConfigurationArgs(once.text, 'controllerManager'))).toEqual({
      'cloud-provider': 'external',
      'configure-cloud-routes': 'false',
    });
    expect(once.text).not.toContain('cloud.conf');
    expect(once.text).toContain('kubernetesVersion: v1.26.15');
    const twice = editClusterConfiguration(once.text, TO_EXTERNAL_KUBEADM);
    expect(twice).toEqual({ text: once.text, changed: false });
  });

  it('handles v1beta4 list-form extraArgs and drops only the in-tree gates', () => {
    const out = editClusterConfiguration(V1BETA4, TO_EXTERNAL_KUBEADM);
    expect(Object.fromEntries(clusterConfigurationArgs(out.text, 'apiServer'))).toEqual({
      'authorization-mode': 'Node,RBAC',
      'feature-gates': 'Foo=true',
    });
    expect(Object.fromEntries(clusterConfigurationArgs(out.text, 'controllerManager'))).toEqual({
      'cloud-provider': 'external',
    });
  });

  it('drops the gates CAPG sets for in-tree gce on 1.29–1.30 (real template)', async () => {
    const docs = parseAllDocuments(await readFile(CAPG, 'utf8')).map((d) => d.toJS());
    const kcp = docs.find((d) => d?.kind === 'KubeadmControlPlane');
    const text =
      `kind: ClusterConfiguration\n${JSON.stringify(kcp.spec.kubeadmConfigSpec.clusterConfiguration)}`.replace(
        /^kind: ClusterConfiguration\n\{/,
        '{"kind":"ClusterConfiguration",',
      );
    const out = editClusterConfiguration(text, TO_EXTERNAL_KUBEADM);
    const kcm = clusterConfigurationArgs(out.text, 'controllerManager');
    expect(kcm.get('feature-gates')).toBeUndefined();
    expect(kcm.get('cloud-provider')).toBe('external');
    expect(kcm.get('allocate-node-cidrs')).toBe('false');
  });

  it('refuses what is not a ClusterConfiguration, without quoting it', () => {
    expect(() =>
      editClusterConfiguration('kind: InitConfiguration\ntoken: abc.secret', TO_EXTERNAL_KUBEADM),
    ).toThrow(InvalidInputError);
    const broken = (): unknown => editClusterConfiguration('kind: [unclosed secret', TO_EXTERNAL_KUBEADM);
    expect(broken).toThrow(InvalidInputError);
    expect(broken).not.toThrow(/secret/);
  });
});
