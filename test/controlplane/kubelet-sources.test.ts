/**
 * Kubelet flag sources as real nodes have them: kubeadm v1.26 (assets/twins/hosts/kubeadm-v1.26-aws),
 * kubeadm-flags.env as kubeadm writes it from a Cluster API template's kubeletExtraArgs, and kops'
 * /etc/sysconfig/kubelet (../shared/reference/kubeadm/kops-nodeup-golden).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { readEnvArgs } from '../../lib/controlplane/flags.ts';
import {
  editKubeletSources,
  effectiveKubeletFlags,
  KUBEADM_FLAGS_FILE,
  KUBELET_CONFIG_FILE,
  KUBELET_FILES,
  type KubeletFiles,
  nodeIPAfterRestart,
} from '../../lib/controlplane/kubelet-sources.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { REFERENCE_DIR, referenceRuns } from '../reference.ts';

const HOSTS = new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/', import.meta.url);
const REFERENCE = `${REFERENCE_DIR}kubeadm`;
const DEFAULTS = '/etc/default/kubelet';
const SYSCONFIG = '/etc/sysconfig/kubelet';

const hostFile = (file: string): string => readFileSync(new URL(file.slice(1), HOSTS), 'utf8');

/** A kubeadm v1.26 node's kubelet files. */
const KUBEADM: KubeletFiles = {
  [KUBEADM_FLAGS_FILE]: hostFile(KUBEADM_FLAGS_FILE),
  [DEFAULTS]: hostFile(DEFAULTS),
  [KUBELET_CONFIG_FILE]: hostFile(KUBELET_CONFIG_FILE),
};

/** kubeadm-flags.env as kubeadm (phases/kubelet/flags.go) writes it for a template's kubeletExtraArgs. */
function kubeadmFlagsFromTemplate(template: string): string {
  const docs = parseAllDocuments(readFileSync(`${REFERENCE}/capi-templates/${template}`, 'utf8')).map((d) =>
    d.toJS(),
  );
  const plane = docs.find((d) => d?.kind === 'KubeadmControlPlane');
  const extra: Record<string, string> =
    plane.spec.kubeadmConfigSpec.initConfiguration.nodeRegistration.kubeletExtraArgs;
  const base = readEnvArgs(hostFile(KUBEADM_FLAGS_FILE), 'KUBELET_KUBEADM_ARGS').filter(
    (a) => !a.startsWith('--cloud-'),
  );
  const args = [...base, ...Object.entries(extra).map(([k, v]) => `--${k}=${v}`)].sort();
  return `KUBELET_KUBEADM_ARGS="${args.join(' ')}"\n`;
}

/** kops' /etc/sysconfig/kubelet (the `contents` of its task). */
function kopsSysconfig(): string {
  const docs = parseAllDocuments(
    readFileSync(`${REFERENCE}/kops-nodeup-golden/v1.22.0/kubelet-featuregates/tasks.yaml`, 'utf8'),
  );
  const task = docs.find((d) => d.get('path') === SYSCONFIG);
  return task?.get('contents') as string;
}

const TO_EXTERNAL = {
  flags: { 'cloud-provider': 'external', 'cloud-config': null },
  featureGates: { DisableKubeletCloudCredentialProviders: null },
};

/** The files after an edit (as the agent would write them). */
function filesAfter(files: KubeletFiles, changes: Parameters<typeof editKubeletSources>[1]): KubeletFiles {
  return Object.fromEntries(Object.entries(editKubeletSources(files, changes)).map(([p, e]) => [p, e.text]));
}

function changedPaths(files: KubeletFiles, changes: Parameters<typeof editKubeletSources>[1]): string[] {
  return Object.entries(editKubeletSources(files, changes))
    .filter(([, e]) => e.changed)
    .map(([p]) => p);
}

describe('kubeadm v1.26', () => {
  it('rewrites kubeadm-flags.env only, in place, and nothing else', () => {
    const edited = editKubeletSources(KUBEADM, TO_EXTERNAL);
    expect(edited[KUBEADM_FLAGS_FILE]).toEqual({
      changed: true,
      text: 'KUBELET_KUBEADM_ARGS="--cloud-provider=external --container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.9"\n',
    });
    expect(changedPaths(KUBEADM, TO_EXTERNAL)).toEqual([KUBEADM_FLAGS_FILE]);
    expect(edited[DEFAULTS]?.text).toBe(KUBEADM[DEFAULTS]);
    expect(edited[SYSCONFIG]).toEqual({ text: undefined, changed: false });
    expect(effectiveKubeletFlags(filesAfter(KUBEADM, TO_EXTERNAL)).get('cloud-provider')).toBe('external');
  });

  it('is idempotent, and moving off and back gives the original bytes', () => {
    const external = filesAfter(KUBEADM, TO_EXTERNAL);
    expect(changedPaths(external, TO_EXTERNAL)).toEqual([]);
    const back = filesAfter(external, {
      flags: { 'cloud-provider': 'aws', 'cloud-config': '/etc/kubernetes/cloud.conf' },
    });
    expect(back).toEqual({ ...KUBEADM, [SYSCONFIG]: undefined });
  });

  it('rewrites a flag in every source that gives it; later sources win when reading', () => {
    const files = { ...KUBEADM, [DEFAULTS]: 'KUBELET_EXTRA_ARGS=--cloud-provider=gce --v=2\n' };
    expect(effectiveKubeletFlags(files).get('cloud-provider')).toBe('gce');
    const edited = filesAfter(files, TO_EXTERNAL);
    expect(edited[DEFAULTS]).toBe('KUBELET_EXTRA_ARGS=--cloud-provider=external --v=2\n');
    expect(edited[KUBEADM_FLAGS_FILE]).toContain('"--cloud-provider=external --container');
  });

  it('adds a flag no source gives to kubeadm-flags.env, creating the variable or the file', () => {
    expect(
      filesAfter(KUBEADM, { flags: { 'provider-id': 'aws:///us-east-1a/i-0abc' } })[KUBEADM_FLAGS_FILE],
    ).toBe(
      KUBEADM[KUBEADM_FLAGS_FILE]?.replace('pause:3.9"', 'pause:3.9 --provider-id=aws:///us-east-1a/i-0abc"'),
    );
    const noVariable = { ...KUBEADM, [KUBEADM_FLAGS_FILE]: '# written by hand\n' };
    expect(filesAfter(noVariable, TO_EXTERNAL)[KUBEADM_FLAGS_FILE]).toBe(
      '# written by hand\nKUBELET_KUBEADM_ARGS="--cloud-provider=external"\n',
    );
    const noFile = { [DEFAULTS]: 'KUBELET_EXTRA_ARGS=\n' };
    const edited = editKubeletSources(noFile, TO_EXTERNAL);
    expect(edited[KUBEADM_FLAGS_FILE]).toEqual({
      text: 'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n',
      changed: true,
    });
    expect(edited[DEFAULTS]).toEqual({ text: 'KUBELET_EXTRA_ARGS=\n', changed: false });
  });
});

describe('every spelling', () => {
  it('handles `--a b`, repeats, quoting styles and spacing, changing only the words it must', () => {
    const files = {
      [KUBEADM_FLAGS_FILE]:
        "# kubeadm\nKUBELET_KUBEADM_ARGS='--cloud-provider aws  --cloud-config=/etc/kubernetes/cloud.conf\t--v=2'\n",
      [DEFAULTS]:
        'KUBELET_EXTRA_ARGS="--node-labels=a=b --cloud-provider=aws --cloud-provider=gce"  # two\nOTHER=1\n',
    };
    expect(effectiveKubeletFlags(files).get('cloud-provider')).toBe('gce');
    const edited = filesAfter(files, TO_EXTERNAL);
    expect(edited[KUBEADM_FLAGS_FILE]).toBe(
      "# kubeadm\nKUBELET_KUBEADM_ARGS='--cloud-provider=external --v=2'\n",
    );
    expect(edited[DEFAULTS]).toBe(
      'KUBELET_EXTRA_ARGS="--node-labels=a=b --cloud-provider=external"  # two\nOTHER=1\n',
    );
    expect(changedPaths(edited, TO_EXTERNAL)).toEqual([]);
  });

  it('edits only the last assignment of a variable, the one systemd uses', () => {
    const text = 'KUBELET_EXTRA_ARGS=--cloud-provider=aws\nKUBELET_EXTRA_ARGS=--cloud-provider=gce --v=4\n';
    expect(filesAfter({ [DEFAULTS]: text }, { flags: { 'cloud-provider': null } })[DEFAULTS]).toBe(
      'KUBELET_EXTRA_ARGS=--cloud-provider=aws\nKUBELET_EXTRA_ARGS=--v=4\n',
    );
  });
});

describe('feature gates', () => {
  it.runIf(referenceRuns())('capg: removes one in-tree gate and keeps the other, then the whole flag', () => {
    const capg = kubeadmFlagsFromTemplate('capg-v1.10.0/cluster-template.yaml');
    const files = { ...KUBEADM, [KUBEADM_FLAGS_FILE]: capg };
    expect(effectiveKubeletFlags(files).get('feature-gates')).toBe(
      'DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false',
    );
    const one = filesAfter(files, TO_EXTERNAL);
    expect(one[KUBEADM_FLAGS_FILE]).toBe(
      capg
        .replace('--cloud-provider=gce', '--cloud-provider=external')
        .replace(',DisableKubeletCloudCredentialProviders=false', ''),
    );
    const none = filesAfter(one, { featureGates: { DisableCloudProviders: null } });
    expect(none[KUBEADM_FLAGS_FILE]).not.toContain('feature-gates');
    expect(effectiveKubeletFlags(none).has('feature-gates')).toBe(false);
  });

  it('edits the KubeletConfiguration’s featureGates where a gate is, never adds to it', () => {
    const config = `${KUBEADM[KUBELET_CONFIG_FILE]}featureGates:\n  DisableKubeletCloudCredentialProviders: false\n  RotateKubeletServerCertificate: true\n`;
    const files = { ...KUBEADM, [KUBELET_CONFIG_FILE]: config };
    expect(effectiveKubeletFlags(files).get('feature-gates')).toBe(
      'DisableKubeletCloudCredentialProviders=false,RotateKubeletServerCertificate=true',
    );
    const removed = filesAfter(files, TO_EXTERNAL);
    expect(removed[KUBELET_CONFIG_FILE]).toBe(
      `${KUBEADM[KUBELET_CONFIG_FILE]}featureGates:\n  RotateKubeletServerCertificate: true\n`,
    );
    expect(removed[KUBEADM_FLAGS_FILE]).not.toContain('feature-gates');
    const emptied = filesAfter(files, {
      featureGates: { DisableKubeletCloudCredentialProviders: null, RotateKubeletServerCertificate: null },
    });
    expect(emptied[KUBELET_CONFIG_FILE]).toBe(KUBEADM[KUBELET_CONFIG_FILE]);
    const set = filesAfter(files, {
      featureGates: { DisableKubeletCloudCredentialProviders: true, DisableCloudProviders: false },
    });
    expect(set[KUBELET_CONFIG_FILE]).toBe(
      config.replace(
        'DisableKubeletCloudCredentialProviders: false',
        'DisableKubeletCloudCredentialProviders: true',
      ),
    );
    expect(readEnvArgs(set[KUBEADM_FLAGS_FILE] ?? '', 'KUBELET_KUBEADM_ARGS')).toContain(
      '--feature-gates=DisableCloudProviders=false',
    );
  });

  it('refuses a config file it cannot read, naming it', () => {
    const files = { ...KUBEADM, [KUBELET_CONFIG_FILE]: 'kind: KubeletConfiguration\nfeatureGates: [\n' };
    expect(() => editKubeletSources(files, TO_EXTERNAL)).toThrow(InvalidInputError);
    expect(() => editKubeletSources(files, TO_EXTERNAL)).toThrow(
      /^\/var\/lib\/kubelet\/config\.yaml: not valid YAML \([A-Z_]+ at line 3, column 1\)$/,
    );
    expect(() =>
      editKubeletSources({ ...KUBEADM, [KUBELET_CONFIG_FILE]: 'kind: Pod\n' }, TO_EXTERNAL),
    ).toThrow(`${KUBELET_CONFIG_FILE}: not a KubeletConfiguration`);
    // Flags alone never need the config file.
    expect(changedPaths(files, { flags: TO_EXTERNAL.flags })).toEqual([KUBEADM_FLAGS_FILE]);
  });
});

describe('kops (DAEMON_ARGS in /etc/sysconfig/kubelet)', () => {
  it.runIf(referenceRuns())('changes only the cloud words of DAEMON_ARGS', () => {
    const sysconfig = kopsSysconfig();
    const files = { [SYSCONFIG]: sysconfig };
    expect(effectiveKubeletFlags(files).get('cloud-provider')).toBe('aws');
    const edited = editKubeletSources(files, TO_EXTERNAL);
    expect(edited[SYSCONFIG]?.text).toBe(
      sysconfig
        .replace('--cloud-provider=aws', '--cloud-provider=external')
        .replace(' --cloud-config=/etc/kubernetes/in-tree-cloud.config', ''),
    );
    expect(edited[KUBEADM_FLAGS_FILE]).toEqual({ text: undefined, changed: false });
  });

  it.runIf(referenceRuns())(
    'adds a flag no source gives to DAEMON_ARGS, the only variable kops’ unit reads',
    () => {
      const edited = filesAfter(
        { [SYSCONFIG]: kopsSysconfig() },
        { flags: { 'provider-id': 'aws:///us-east-1a/i-0abc' } },
      );
      expect(edited[KUBEADM_FLAGS_FILE]).toBeUndefined();
      expect(effectiveKubeletFlags(edited).get('provider-id')).toBe('aws:///us-east-1a/i-0abc');
      expect(edited[SYSCONFIG]).toContain('HOME="/root"\n');
    },
  );

  it('knows every file it may touch', () => {
    expect(KUBELET_FILES).toEqual([KUBEADM_FLAGS_FILE, DEFAULTS, SYSCONFIG, KUBELET_CONFIG_FILE]);
  });
});

describe('nodeIPAfterRestart', () => {
  const files = (extra: string) => ({
    '/var/lib/kubelet/kubeadm-flags.env': 'KUBELET_KUBEADM_ARGS="--cloud-provider=aws --node-ip=10.0.0.11"\n',
    '/etc/default/kubelet': `KUBELET_EXTRA_ARGS=${extra}\n`,
  });

  it('takes the flag files’ last --node-ip, whatever the kubelet runs with now', () => {
    expect(nodeIPAfterRestart(files('--node-ip=10.1.0.11'), ['--node-ip=10.9.9.9'])).toBe('10.1.0.11');
    expect(nodeIPAfterRestart(files(''), undefined)).toBe('10.0.0.11');
  });

  it('keeps the running one when no file gives it (it comes from a source the flip leaves alone)', () => {
    expect(
      nodeIPAfterRestart({ '/etc/default/kubelet': 'KUBELET_EXTRA_ARGS=\n' }, ['--node-ip', '10.2.0.1']),
    ).toBe('10.2.0.1');
    expect(nodeIPAfterRestart({}, undefined)).toBeUndefined();
  });
});
