/**
 * Static pod manifests as real tools write them: kubeadm v1.26 (assets/twins/hosts/kubeadm-v1.26-aws, flags
 * in `command`), kops nodeup golden files (flags in `args` after go-runner's own), and kubeadm manifests
 * made from the Cluster API templates' extraArgs/extraVolumes (../shared/reference/kubeadm/capi-templates).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { cloudFlagsOf, editStaticPod } from '../../lib/controlplane/static-pod.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { REFERENCE_DIR, referenceRuns } from '../reference.ts';

const HOSTS = new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/', import.meta.url);
const REFERENCE = `${REFERENCE_DIR}kubeadm`;

/** A kubeadm host file as the twin writes it on a node (its placeholders filled). */
function kubeadm(file: string): string {
  return readFileSync(new URL(file.slice(1), HOSTS), 'utf8').replaceAll('{{nodeIP}}', '10.0.1.10');
}
const KAS = kubeadm('/etc/kubernetes/manifests/kube-apiserver.yaml');
const KCM = kubeadm('/etc/kubernetes/manifests/kube-controller-manager.yaml');

/** The static pod a kops nodeup task list writes (the `contents` of its Pod task). */
function kops(file: string): string {
  const docs = parseAllDocuments(readFileSync(`${REFERENCE}/kops-nodeup-golden/${file}`, 'utf8'));
  const contents = docs
    .map((d) => d.get('contents'))
    .find((c) => typeof c === 'string' && c.includes('kind: Pod'));
  if (typeof contents !== 'string') throw new Error(`${file} has no Pod task`);
  return contents;
}

/** The extraArgs and extraVolumes a Cluster API template gives kubeadm for one component. */
function capiComponent(
  template: string,
  component: 'apiServer' | 'controllerManager',
): { args: Record<string, string>; volumes: { name: string; hostPath: string }[] } {
  const docs = parseAllDocuments(readFileSync(`${REFERENCE}/capi-templates/${template}`, 'utf8'));
  const plane = docs.map((d) => d.toJS()).find((d) => d?.kind === 'KubeadmControlPlane');
  const config = plane.spec.kubeadmConfigSpec.clusterConfiguration[component];
  return { args: config.extraArgs ?? {}, volumes: config.extraVolumes ?? [] };
}

/**
 * The kubeadm v1.26 manifest with a template's cloud extraArgs instead of the AWS ones: the flags list
 * rebuilt sorted by name as kubeadm writes it, the cloud-config volume renamed and re-pointed as the
 * template's extraVolumes say (kubeadm keeps volumes and mounts sorted by name; the order matters not here).
 */
function kubeadmFromTemplate(
  base: string,
  template: string,
  component: 'apiServer' | 'controllerManager',
): string {
  const { args, volumes } = capiComponent(template, component);
  const lines = base.split('\n');
  const first = lines.findIndex((l) => /^ {4}- kube-/.test(l));
  let end = first + 1;
  while (lines[end]?.startsWith('    - --')) end++;
  const kept = lines.slice(first + 1, end).filter((l) => !/--cloud-(provider|config)=/.test(l));
  const extra = Object.entries(args).map(([k, v]) => `    - --${k}=${v}`);
  const flags = [
    ...kept.filter((l) => !extra.some((e) => e.split('=')[0] === l.split('=')[0])),
    ...extra,
  ].sort((a, b) => (a.split('=')[0] as string).localeCompare(b.split('=')[0] as string));
  let text = [...lines.slice(0, first + 1), ...flags, ...lines.slice(end)].join('\n');
  const volume = volumes.find((v) => v.hostPath === args['cloud-config']);
  if (volume) {
    text = text
      .replaceAll('/etc/kubernetes/cloud.conf', volume.hostPath)
      .replaceAll('name: cloud-config', `name: ${volume.name}`);
  } else {
    text = text.replace(/ {4}- mountPath: \/etc\/kubernetes\/cloud\.conf\n.*\n.*\n/, '');
    text = text.replace(/ {2}- hostPath:\n {6}path: \/etc\/kubernetes\/cloud\.conf\n.*\n.*\n/, '');
  }
  return text;
}

/** The text without the lines that hold any of `needles`. */
function withoutLines(text: string, ...needles: string[]): string {
  return text
    .split('\n')
    .filter((l) => !needles.some((n) => l.includes(n)))
    .join('\n');
}

/** The container's command + args, parsed. */
function commandLine(text: string): string[] {
  const pod = parse(text);
  const c = pod.spec.containers[0];
  return [...(c.command ?? []), ...(c.args ?? [])];
}

const TO_EXTERNAL_KAS = {
  flags: { 'cloud-provider': null, 'cloud-config': null },
  featureGates: { DisableCloudProviders: null, DisableKubeletCloudCredentialProviders: null },
  dropUnusedCloudConfigVolume: true,
};
const TO_EXTERNAL_KCM = { ...TO_EXTERNAL_KAS, flags: { 'cloud-provider': 'external', 'cloud-config': null } };

describe('kubeadm v1.26 manifests', () => {
  it('reads the cloud flags', () => {
    expect(cloudFlagsOf(KAS)).toEqual({
      'cloud-provider': 'aws',
      'cloud-config': '/etc/kubernetes/cloud.conf',
    });
    expect(cloudFlagsOf(KCM)).toEqual({
      'allocate-node-cidrs': 'true',
      'cloud-config': '/etc/kubernetes/cloud.conf',
      'cloud-provider': 'aws',
      'cluster-cidr': '192.168.0.0/16',
      'cluster-name': 'kubernetes',
      'configure-cloud-routes': 'false',
      controllers: '*,bootstrapsigner,tokencleaner',
    });
  });

  it('takes kube-apiserver off the provider: the two flags and the cloud-config volume go, every other byte stays', () => {
    const result = editStaticPod(KAS, TO_EXTERNAL_KAS);
    expect(result.changed).toBe(true);
    expect(result.flags).toEqual({});
    const mountAndVolume =
      /( {4}- mountPath: \/etc\/kubernetes\/cloud\.conf\n.*\n.*\n)|( {2}- hostPath:\n {6}path: \/etc\/kubernetes\/cloud\.conf\n.*\n.*\n)/g;
    expect(result.text).toBe(
      withoutLines(KAS, '--cloud-provider=aws', '--cloud-config=').replace(mountAndVolume, ''),
    );
    expect(result.text).not.toContain('cloud.conf');
  });

  it('sets kube-controller-manager’s provider to external in place', () => {
    const result = editStaticPod(KCM, TO_EXTERNAL_KCM);
    expect(result.flags['cloud-provider']).toBe('external');
    expect(result.flags['cloud-config']).toBeUndefined();
    const lines = result.text.split('\n');
    expect(lines[lines.indexOf('    - --cloud-provider=external') - 1]).toBe(
      '    - --client-ca-file=/etc/kubernetes/pki/ca.crt',
    );
    expect(commandLine(result.text)).toEqual(
      commandLine(KCM)
        .filter((a) => !a.startsWith('--cloud-config='))
        .map((a) => (a === '--cloud-provider=aws' ? '--cloud-provider=external' : a)),
    );
  });

  it('is idempotent: an edit already in effect returns the same text', () => {
    for (const [text, edit] of [
      [KAS, TO_EXTERNAL_KAS],
      [KCM, TO_EXTERNAL_KCM],
    ] as const) {
      const once = editStaticPod(text, edit);
      const twice = editStaticPod(once.text, edit);
      expect(twice).toEqual({ text: once.text, changed: false, flags: once.flags });
    }
    expect(editStaticPod(KCM, { flags: { 'cloud-provider': 'aws' } })).toMatchObject({
      text: KCM,
      changed: false,
    });
  });

  it('puts flags back where kubeadm had them: moving off and back again gives the original bytes', () => {
    const off = editStaticPod(KCM, { flags: { 'cloud-provider': 'external', 'cloud-config': null } });
    const back = editStaticPod(off.text, {
      flags: { 'cloud-provider': 'aws', 'cloud-config': '/etc/kubernetes/cloud.conf' },
    });
    expect(back.text).toBe(KCM);
  });

  it('keeps the cloud-config volume when asked to, or while a remaining flag still reads from the mount', () => {
    const kept = editStaticPod(KCM, { ...TO_EXTERNAL_KCM, dropUnusedCloudConfigVolume: false });
    expect(kept.text).toContain('name: cloud-config');
    const migration = editStaticPod(
      KCM.replace(
        '    - --leader-elect=true\n',
        '    - --leader-elect=true\n    - --leader-migration-config=/etc/kubernetes/cloud.conf\n',
      ),
      TO_EXTERNAL_KCM,
    );
    expect(migration.text.match(/cloud\.conf/g)).toHaveLength(3);
    expect(migration.text).toContain(
      '    - mountPath: /etc/kubernetes/cloud.conf\n      name: cloud-config\n',
    );
  });

  it('adds a new flag in name order and a feature gate in a new --feature-gates', () => {
    const result = editStaticPod(KAS, {
      flags: { 'enable-leader-migration': 'true' },
      featureGates: { DisableCloudProviders: false },
    });
    const args = commandLine(result.text);
    expect(args.indexOf('--enable-leader-migration=true')).toBe(
      args.indexOf('--enable-bootstrap-token-auth=true') + 1,
    );
    expect(args.indexOf('--feature-gates=DisableCloudProviders=false')).toBe(
      args.indexOf('--etcd-servers=https://127.0.0.1:2379') + 1,
    );
    expect(result.text.split('\n').length).toBe(KAS.split('\n').length + 2);
  });
});

describe('every spelling of a flag', () => {
  const spelled = KCM.replace(
    '    - --cloud-config=/etc/kubernetes/cloud.conf\n',
    '    - --cloud-config\n    - /etc/kubernetes/cloud.conf\n',
  )
    .replace('    - --cloud-provider=aws\n', '    - "--cloud-provider=aws"  # in-tree\n')
    .replace('    - --leader-elect=true\n', "    - '--cloud-provider=gce'\n    - --leader-elect\n");

  it('reads `--name value`, quoted items, repeats (the last wins) and bare booleans', () => {
    expect(cloudFlagsOf(spelled)).toMatchObject({
      'cloud-provider': 'gce',
      'cloud-config': '/etc/kubernetes/cloud.conf',
    });
  });

  it('rewrites the first occurrence in its own quoting, drops the repeats and both words of `--name value`', () => {
    const result = editStaticPod(spelled, TO_EXTERNAL_KCM);
    expect(result.text).toContain('    - "--cloud-provider=external"  # in-tree\n');
    expect(result.text).not.toContain('gce');
    expect(result.text).not.toContain('cloud.conf');
    expect(result.text).toContain('    - --leader-elect\n');
    expect(editStaticPod(result.text, TO_EXTERNAL_KCM).changed).toBe(false);
  });

  it('keeps CRLF line endings, also on lines it adds', () => {
    const crlf = KCM.replaceAll('\n', '\r\n');
    const result = editStaticPod(crlf, {
      flags: { 'cloud-provider': 'external', 'cloud-config': null, 'enable-leader-migration': 'true' },
    });
    expect(result.text.replace(/\r\n/g, '')).not.toContain('\n');
    expect(result.text).toContain('\r\n    - --enable-leader-migration=true\r\n');
  });

  it('edits a JSON manifest (flow style) and keeps it JSON', () => {
    const json = `${JSON.stringify(parse(KCM), null, 2)}\n`;
    const result = editStaticPod(json, {
      ...TO_EXTERNAL_KCM,
      flags: { ...TO_EXTERNAL_KCM.flags, 'enable-leader-migration': 'true' },
    });
    const pod = JSON.parse(result.text);
    expect(pod.spec.containers[0].command).toEqual(
      setExpected(
        commandLine(KCM),
        { '--cloud-config': null, '--cloud-provider': '--cloud-provider=external' },
        '--enable-leader-migration=true',
        '--controllers=',
      ),
    );
    expect(pod.spec.volumes.map((v: { name: string }) => v.name)).not.toContain('cloud-config');
    expect(editStaticPod(result.text, TO_EXTERNAL_KCM).changed).toBe(false);
  });
});

/** The expected list: flags replaced or dropped by name, `added` inserted after the flag starting with `after`. */
function setExpected(
  args: string[],
  changes: Record<string, string | null>,
  added: string,
  after: string,
): string[] {
  const out = args.flatMap((a) => {
    const name = a.split('=')[0] as string;
    if (!(name in changes)) return [a];
    const v = changes[name];
    return v === null || v === undefined ? [] : [v];
  });
  out.splice(out.findIndex((a) => a.startsWith(after)) + 1, 0, added);
  return out;
}

describe.runIf(referenceRuns())('kops manifests (flags in args, after go-runner’s own)', () => {
  const kcm = 'v1.24.0/minimal/tasks-kube-controller-manager.yaml';
  const kas = 'v1.24.0/minimal/tasks-kube-apiserver.yaml';

  it('turns the v1.24 kube-controller-manager into the flags kops itself writes for an external CCM', () => {
    const result = editStaticPod(kops(kcm), {
      flags: { 'cloud-provider': 'external', 'cloud-config': null, 'enable-leader-migration': null },
      featureGates: { CSIMigrationAWS: null, InTreePluginAWSUnregister: null },
      dropUnusedCloudConfigVolume: true,
    });
    const external = kops('HEAD/minimal/tasks-kube-controller-manager.yaml');
    expect(parse(result.text).spec.containers[0].args).toEqual(parse(external).spec.containers[0].args);
    expect(cloudFlagsOf(result.text)).toEqual(cloudFlagsOf(external));
    expect(result.text).not.toContain('in-tree-cloud.config');
    expect(result.text).not.toContain('name: cloudconfig');
  });

  it('leaves go-runner’s flags alone and adds new flags after the binary', () => {
    const result = editStaticPod(kops(kas), {
      flags: { 'cloud-provider': null, 'cloud-config': null, 'a-first-flag': 'x' },
    });
    const args: string[] = parse(result.text).spec.containers[0].args;
    expect(args.slice(0, 4)).toEqual([
      '--log-file=/var/log/kube-apiserver.log',
      '--also-stdout',
      '/usr/local/bin/kube-apiserver',
      '--a-first-flag=x',
    ]);
    expect(cloudFlagsOf(result.text)).toEqual({
      'feature-gates': 'CSIMigrationAWS=true,InTreePluginAWSUnregister=true',
    });
  });

  it('keeps the other feature gates when one goes', () => {
    const text = kops(kas);
    const result = editStaticPod(text, { featureGates: { InTreePluginAWSUnregister: null } });
    expect(cloudFlagsOf(result.text)['feature-gates']).toBe('CSIMigrationAWS=true');
    expect(result.text).toBe(
      text.replace('CSIMigrationAWS=true,InTreePluginAWSUnregister=true', 'CSIMigrationAWS=true'),
    );
  });
});

describe.runIf(referenceRuns())('manifests kubeadm makes from Cluster API templates', () => {
  it('capg: drops the in-tree gates from --feature-gates, and the flag with them', () => {
    const kas = kubeadmFromTemplate(KAS, 'capg-v1.10.0/cluster-template.yaml', 'apiServer');
    expect(cloudFlagsOf(kas)).toEqual({
      'cloud-provider': 'gce',
      'feature-gates': 'DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false',
    });
    const one = editStaticPod(kas, { featureGates: { DisableKubeletCloudCredentialProviders: null } });
    expect(one.flags['feature-gates']).toBe('DisableCloudProviders=false');
    const all = editStaticPod(kas, TO_EXTERNAL_KAS);
    expect(all.flags).toEqual({});
    expect(all.text).toBe(withoutLines(kas, '--cloud-provider=gce', '--feature-gates='));

    const kcm = kubeadmFromTemplate(KCM, 'capg-v1.10.0/cluster-template.yaml', 'controllerManager');
    const moved = editStaticPod(kcm, TO_EXTERNAL_KCM);
    expect(moved.flags).toMatchObject({ 'cloud-provider': 'external', 'allocate-node-cidrs': 'false' });
    expect(moved.flags['feature-gates']).toBeUndefined();
  });

  it.each([
    ['capz-v1.7.6/cluster-template.yaml', '/etc/kubernetes/azure.json', 'azure'],
    ['capo-v0.6.0/cluster-template.yaml', '/etc/kubernetes/cloud.conf', 'openstack'],
  ])('%s: drops the extraVolume that carried --cloud-config', (template, cloudConfig, provider) => {
    for (const [base, component, edit] of [
      [KAS, 'apiServer', TO_EXTERNAL_KAS],
      [KCM, 'controllerManager', TO_EXTERNAL_KCM],
    ] as const) {
      const text = kubeadmFromTemplate(base, template, component);
      expect(cloudFlagsOf(text)).toMatchObject({ 'cloud-provider': provider, 'cloud-config': cloudConfig });
      const result = editStaticPod(text, edit);
      expect(result.text).not.toContain(cloudConfig);
      const pod = parse(result.text);
      expect(pod.spec.volumes.length).toBe(parse(text).spec.volumes.length - 1);
      expect(pod.spec.containers[0].volumeMounts.length).toBe(
        parse(text).spec.containers[0].volumeMounts.length - 1,
      );
    }
  });
});

describe('files it refuses', () => {
  const refuse = (text: string): string => {
    try {
      editStaticPod(text, TO_EXTERNAL_KCM);
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidInputError);
      return (err as Error).message;
    }
    throw new Error('not refused');
  };

  it('refuses what is not a Pod with a container, naming the problem and never the content', () => {
    expect(refuse(kubeadm('/var/lib/kubelet/config.yaml'))).toBe('not a Pod manifest');
    expect(refuse('apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n')).toBe(
      'a Pod manifest without a container',
    );
    expect(refuse(`${KCM}---\n${KAS}`)).toMatch(/^not valid YAML \(MULTIPLE_DOCS/);
    const broken = KCM.replace('    - --cloud-provider=aws\n', '    - --token=s3cr3t: [oops\n');
    const message = refuse(broken);
    expect(message).toMatch(/^not valid YAML \([A-Z_]+ at line \d+, column \d+\)$/);
    expect(message).not.toContain('s3cr3t');
    expect(refuse(KCM.replace('    - kube-controller-manager\n', '    - /bin/sh\n'))).toBe(
      'cannot tell where the flags of container kube-controller-manager start',
    );
    expect(() => cloudFlagsOf('kind: Deployment\n')).toThrow(InvalidInputError);
  });
});
