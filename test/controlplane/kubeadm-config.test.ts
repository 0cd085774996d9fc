/** The ClusterConfiguration kubeadm keeps in kube-system/kubeadm-config, changed as the manifests are. */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, parseDocument } from 'yaml';
import {
  clusterConfigurationArgs,
  editClusterConfiguration,
  reverseClusterConfigurationEdit,
  revertClusterConfiguration,
} from '../../lib/controlplane/kubeadm-config.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { TO_EXTERNAL_KUBEADM } from '../../lib/steps/edits.ts';
import { REFERENCE_DIR, referenceRuns } from '../reference.ts';

const ASSET = new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/api/kubeadm-config.yaml', import.meta.url);
const CAPG = `${REFERENCE_DIR}kubeadm/capi-templates/capg-v1.10.0/cluster-template.yaml`;

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

/** v1beta4 with a cloud-config and its volume, and gates that are only the in-tree ones on the KCM. */
const V1BETA4_CLOUD_CONFIG = `apiServer:
  certSANs:
  - api.example.internal
  extraArgs:
  - name: cloud-provider
    value: openstack
  - name: cloud-config
    value: /etc/kubernetes/cloud.conf
  extraVolumes:
  - hostPath: /etc/kubernetes/cloud.conf
    mountPath: /etc/kubernetes/cloud.conf
    name: cloud-config
    pathType: File
    readOnly: true
apiVersion: kubeadm.k8s.io/v1beta4
controllerManager:
  extraArgs:
  - name: cloud-provider
    value: openstack
  - name: cloud-config
    value: /etc/kubernetes/cloud.conf
  - name: feature-gates
    value: DisableCloudProviders=false
  extraVolumes:
  - hostPath: /etc/kubernetes/cloud.conf
    mountPath: /etc/kubernetes/cloud.conf
    name: cloud-config
    pathType: File
    readOnly: true
  - hostPath: /etc/ssl/certs/openstack-ca.pem
    mountPath: /etc/ssl/certs/openstack-ca.pem
    name: openstack-ca
    readOnly: true
kind: ClusterConfiguration
`;

type Section = 'apiServer' | 'controllerManager';
const args = (text: string, key: Section): Record<string, string> =>
  Object.fromEntries(clusterConfigurationArgs(text, key));
const section = (text: string, key: Section): Record<string, unknown> =>
  (parse(text) as Record<Section, Record<string, unknown>>)[key];

/** An operator's change after the upgrade: one more apiServer extraArg and certSAN, in the document's form. */
function operatorChange(text: string, arg: { name: string; value: string }): string {
  const doc = parseDocument(text);
  const extraArgs = doc.getIn(['apiServer', 'extraArgs']) as { toJSON(): unknown };
  if (Array.isArray(extraArgs.toJSON())) doc.addIn(['apiServer', 'extraArgs'], arg);
  else doc.setIn(['apiServer', 'extraArgs', arg.name], arg.value);
  if (doc.hasIn(['apiServer', 'certSANs'])) doc.addIn(['apiServer', 'certSANs'], 'added.example.internal');
  else doc.setIn(['apiServer', 'certSANs'], ['added.example.internal']);
  return doc.toString();
}

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

  it.runIf(referenceRuns())(
    'drops the gates CAPG sets for in-tree gce on 1.29–1.30 (real template)',
    async () => {
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
    },
  );

  it('refuses what is not a ClusterConfiguration, without quoting it', () => {
    expect(() =>
      editClusterConfiguration('kind: InitConfiguration\ntoken: abc.secret', TO_EXTERNAL_KUBEADM),
    ).toThrow(InvalidInputError);
    const broken = (): unknown => editClusterConfiguration('kind: [unclosed secret', TO_EXTERNAL_KUBEADM);
    expect(broken).toThrow(InvalidInputError);
    expect(broken).not.toThrow(/secret/);
  });

  it('reverses the upgrade edit as exactly what it took out of the original', async () => {
    expect(reverseClusterConfigurationEdit(await v1beta3(), TO_EXTERNAL_KUBEADM)).toEqual({
      apiServer: {
        flags: { 'cloud-provider': 'aws', 'cloud-config': '/etc/kubernetes/cloud.conf' },
        featureGates: {},
        addVolumes: [
          {
            hostPath: '/etc/kubernetes/cloud.conf',
            mountPath: '/etc/kubernetes/cloud.conf',
            name: 'cloud-config',
            pathType: 'File',
            readOnly: true,
          },
        ],
      },
      controllerManager: {
        flags: { 'cloud-provider': 'aws', 'cloud-config': '/etc/kubernetes/cloud.conf' },
        featureGates: {},
        addVolumes: [expect.objectContaining({ name: 'cloud-config' })],
      },
    });
    expect(reverseClusterConfigurationEdit(V1BETA4, TO_EXTERNAL_KUBEADM)).toEqual({
      apiServer: {
        flags: { 'cloud-provider': 'gce' },
        featureGates: { DisableCloudProviders: false, DisableKubeletCloudCredentialProviders: false },
        addVolumes: [],
      },
      controllerManager: { flags: { 'cloud-provider': 'gce' }, featureGates: {}, addVolumes: [] },
    });
  });

  it('gives the original bytes back when the document is what the upgrade wrote, and leaves the original alone', async () => {
    for (const original of [await v1beta3(), V1BETA4, V1BETA4_CLOUD_CONFIG]) {
      const written = editClusterConfiguration(original, TO_EXTERNAL_KUBEADM).text;
      expect(written).not.toBe(original);
      expect(revertClusterConfiguration(written, original, TO_EXTERNAL_KUBEADM)).toEqual({
        text: original,
        how: 'original',
      });
      expect(revertClusterConfiguration(original, original, TO_EXTERNAL_KUBEADM)).toEqual({
        text: original,
        how: 'unchanged',
      });
    }
  });

  it('puts the in-tree settings back onto a v1beta3 map changed since, keeping the change, once', async () => {
    const original = await v1beta3();
    const changed = operatorChange(editClusterConfiguration(original, TO_EXTERNAL_KUBEADM).text, {
      name: 'audit-log-path',
      value: '/var/log/kube-audit.log',
    });
    const back = revertClusterConfiguration(changed, original, TO_EXTERNAL_KUBEADM);
    expect(back.how).toBe('merged');
    expect(args(back.text, 'apiServer')).toEqual({
      ...args(original, 'apiServer'),
      'audit-log-path': '/var/log/kube-audit.log',
    });
    expect(args(back.text, 'controllerManager')).toEqual(args(original, 'controllerManager'));
    for (const key of ['apiServer', 'controllerManager'] as const) {
      expect(section(back.text, key).extraVolumes).toEqual(section(original, key).extraVolumes);
    }
    expect(section(back.text, 'apiServer').certSANs).toEqual(['added.example.internal']);
    expect(back.text).not.toMatch(/extraVolumes:\s*\[/);
    expect(revertClusterConfiguration(back.text, original, TO_EXTERNAL_KUBEADM)).toEqual({
      text: back.text,
      how: 'unchanged',
    });
  });

  it('puts the in-tree settings back onto a v1beta4 list changed since: flags, gates, volume, in list form', () => {
    for (const original of [V1BETA4, V1BETA4_CLOUD_CONFIG]) {
      const changed = operatorChange(editClusterConfiguration(original, TO_EXTERNAL_KUBEADM).text, {
        name: 'audit-log-maxage',
        value: '30',
      });
      const back = revertClusterConfiguration(changed, original, TO_EXTERNAL_KUBEADM);
      expect(back.how).toBe('merged');
      const api = args(back.text, 'apiServer');
      const { 'feature-gates': gates, ...rest } = api;
      const { 'feature-gates': originalGates, ...originalRest } = args(original, 'apiServer');
      expect(rest).toEqual({ ...originalRest, 'audit-log-maxage': '30' });
      expect(gates?.split(',').sort()).toEqual(originalGates?.split(',').sort());
      expect(args(back.text, 'controllerManager')).toEqual(args(original, 'controllerManager'));
      for (const key of ['apiServer', 'controllerManager'] as const) {
        expect(Array.isArray(section(back.text, key).extraArgs)).toBe(true);
        expect(
          (section(back.text, key).extraVolumes as { name: string }[] | undefined)?.map((v) => v.name).sort(),
        ).toEqual(
          (section(original, key).extraVolumes as { name: string }[] | undefined)?.map((v) => v.name).sort(),
        );
      }
      expect(section(back.text, 'apiServer').certSANs).toContain('added.example.internal');
      expect(revertClusterConfiguration(back.text, original, TO_EXTERNAL_KUBEADM).how).toBe('unchanged');
    }
  });

  it('keeps an operator’s own volume and does not double one the operator already put back', () => {
    const written = editClusterConfiguration(V1BETA4_CLOUD_CONFIG, TO_EXTERNAL_KUBEADM).text;
    const doc = parseDocument(written);
    doc.addIn(['controllerManager', 'extraVolumes'], {
      hostPath: '/etc/kubernetes/cloud.conf',
      mountPath: '/etc/kubernetes/cloud.conf',
      name: 'cloud-config',
      readOnly: true,
    });
    doc.addIn(['controllerManager', 'extraVolumes'], { hostPath: '/srv/x', mountPath: '/srv/x', name: 'x' });
    const back = revertClusterConfiguration(doc.toString(), V1BETA4_CLOUD_CONFIG, TO_EXTERNAL_KUBEADM);
    expect(back.how).toBe('merged');
    const names = (section(back.text, 'controllerManager').extraVolumes as { name: string }[]).map(
      (v) => v.name,
    );
    expect(names).toEqual(['openstack-ca', 'cloud-config', 'x']);
    expect(args(back.text, 'controllerManager')['feature-gates']).toBe('DisableCloudProviders=false');
  });
});
