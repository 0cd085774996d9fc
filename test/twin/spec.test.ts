import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CloudModel } from '../../lib/twin/cloud/model.ts';
import {
  DurationSchema,
  LATENCY_PROFILES,
  loadTwinSpec,
  nodeNames,
  parseTwinSpec,
  renderHostFile,
  type TwinSpec,
  TwinSpecError,
  TwinSpecSchema,
} from '../../lib/twin/spec.ts';

const EXAMPLES = ['assets/twins/aws-ha.yaml', 'assets/twins/aws-single.yaml'];
const FIXTURES = ['test/fixtures/twins/aws-mini.yaml', 'test/fixtures/twins/aws-ha-mini.yaml'];
const KAS_PATH = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const KCM_PATH = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
const FLAGS_PATH = '/var/lib/kubelet/kubeadm-flags.env';

/** A static pod as far as these tests read it. */
interface Pod {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: {
    containers: {
      name: string;
      image: string;
      command: string[];
      volumeMounts: { name: string; mountPath: string }[];
      livenessProbe: { httpGet: { host: string } };
    }[];
    volumes: { name: string; hostPath: { path: string } }[];
  };
}

/** One node's files as the twin writes them: the group's files with the node's placeholders replaced. */
interface RenderedNode {
  readonly name: string;
  readonly role: 'control-plane' | 'worker';
  readonly ip: string;
  readonly files: Record<string, string>;
}

function renderNodes(spec: TwinSpec): RenderedNode[] {
  const cloud = new CloudModel(spec);
  return spec.nodeGroups.flatMap((group) =>
    nodeNames(group).map((name) => {
      const placement = cloud.placement(name);
      if (!placement) throw new Error(`the cloud model did not place ${name}`);
      const values = { nodeName: name, nodeIP: placement.ip, index: placement.index };
      const files = Object.fromEntries(
        Object.entries(group.files).map(([file, text]) => [file, renderHostFile(text, values)]),
      );
      return { name, role: group.role, ip: placement.ip, files };
    }),
  );
}

function fileOf(node: RenderedNode, file: string): string {
  const text = node.files[file];
  if (text === undefined) throw new Error(`${node.name} has no ${file}`);
  return text;
}

function podOf(node: RenderedNode, file: string): Pod {
  return parseYaml(fileOf(node, file)) as Pod;
}

function containerOf(pod: Pod): Pod['spec']['containers'][number] {
  const container = pod.spec.containers[0];
  if (!container) throw new Error(`${pod.metadata.name} has no container`);
  return container;
}

function flagValue(args: readonly string[], flag: string): string | undefined {
  const prefix = `--${flag}=`;
  return args.find((arg) => arg.startsWith(prefix))?.slice(prefix.length);
}

/** KUBELET_KUBEADM_ARGS="…" as systemd's EnvironmentFile= reads it: one quoted value, split on spaces. */
function kubeadmArgs(envFile: string): string[] {
  const match = /^KUBELET_KUBEADM_ARGS="([^"]*)"$/m.exec(envFile);
  if (!match?.[1]) throw new Error(`no KUBELET_KUBEADM_ARGS in ${envFile}`);
  return match[1].split(/\s+/).filter(Boolean);
}

async function loadAll(files: readonly string[]): Promise<Map<string, TwinSpec>> {
  const specs = await Promise.all(files.map((file) => loadTwinSpec(file)));
  return new Map(files.map((file, i) => [file, specs[i] as TwinSpec]));
}

describe('example specs and test fixtures', () => {
  let specs: Map<string, TwinSpec>;
  beforeAll(async () => {
    specs = await loadAll([...EXAMPLES, ...FIXTURES]);
  });

  function spec(file: string): TwinSpec {
    const found = specs.get(file);
    if (!found) throw new Error(`${file} was not loaded`);
    return found;
  }

  it.each([...EXAMPLES, ...FIXTURES])('validates %s with every file reference resolved to text', (file) => {
    const loaded = spec(file);

    expect(loaded.kind).toBe('ClusterTwin');
    for (const group of loaded.nodeGroups) {
      for (const text of Object.values(group.files)) expect(typeof text).toBe('string');
    }
  });

  it('describes aws-ha as three control-plane nodes and five workers on v1.26.15 in three zones', () => {
    const loaded = spec('assets/twins/aws-ha.yaml');

    expect(loaded.kubernetesVersion).toBe('v1.26.15');
    expect(loaded.cloud).toMatchObject({
      provider: 'aws',
      region: 'us-east-1',
      zones: ['us-east-1a', 'us-east-1b', 'us-east-1c'],
    });
    expect(loaded.nodeGroups.flatMap((g) => nodeNames(g))).toEqual([
      'cp-1',
      'cp-2',
      'cp-3',
      'worker-1',
      'worker-2',
      'worker-3',
      'worker-4',
      'worker-5',
    ]);
    expect(loaded.latencies).toMatchObject({
      staticPodRestart: 2000,
      kubeletRestart: 1000,
      podStart: 500,
      nodeInit: 200,
    });
  });

  it('describes aws-single as one control-plane node and two workers', () => {
    const loaded = spec('assets/twins/aws-single.yaml');

    expect(loaded.nodeGroups.map((g) => [g.role, nodeNames(g).length])).toEqual([
      ['control-plane', 1],
      ['worker', 2],
    ]);
  });

  it('takes a latency profile’s figures, any figure given beside it in its place', () => {
    const parse = (latencies: unknown) =>
      TwinSpecSchema.parse({ ...spec('assets/twins/aws-ha.yaml'), latencies }).latencies;

    expect(parse({})).toEqual({ profile: 'short', ...LATENCY_PROFILES.short });
    expect(parse({ profile: 'realistic', kubeletRestart: '4s' })).toEqual({
      ...LATENCY_PROFILES.realistic,
      profile: 'realistic',
      kubeletRestart: 4000,
    });
    expect(() => parse({ profile: 'slow' })).toThrow(/profile/);
  });

  it('gives the fixtures latencies of a few milliseconds', () => {
    for (const file of FIXTURES) {
      const { staticPodRestart, kubeletRestart, podStart, nodeInit } = spec(file).latencies;

      expect(Math.max(staticPodRestart, kubeletRestart, podStart, nodeInit)).toBeLessThanOrEqual(50);
    }
  });

  it('gives the fixtures the very host files of the example specs', () => {
    const example = spec('assets/twins/aws-ha.yaml');

    for (const file of FIXTURES) {
      expect(spec(file).nodeGroups.map((g) => g.files)).toEqual(example.nodeGroups.map((g) => g.files));
    }
  });
});

describe.each([...EXAMPLES, ...FIXTURES])(
  'host files of %s, as the rest of the product reads them',
  (file) => {
    let nodes: RenderedNode[];
    beforeAll(async () => {
      nodes = renderNodes(await loadTwinSpec(file));
    });
    const controlPlane = (): RenderedNode[] => nodes.filter((n) => n.role === 'control-plane');

    it('leaves no placeholder unreplaced on any node', () => {
      for (const node of nodes) {
        for (const text of Object.values(node.files)) expect(text).not.toMatch(/\{\{\w+\}\}/);
      }
    });

    it.each([
      [KAS_PATH, 'kube-apiserver'],
      [KCM_PATH, 'kube-controller-manager'],
    ])(
      'runs %s as a Pod with the in-tree aws provider and its cloud config mounted',
      (manifest, component) => {
        for (const node of controlPlane()) {
          const pod = podOf(node, manifest);
          const container = containerOf(pod);
          const cloudConfig = flagValue(container.command, 'cloud-config');

          expect(pod.kind).toBe('Pod');
          expect(pod.metadata.name).toBe(component);
          expect(container.image).toBe(`registry.k8s.io/${component}:v1.26.15`);
          expect(container.command[0]).toBe(component);
          expect(flagValue(container.command, 'cloud-provider')).toBe('aws');
          expect(cloudConfig).toBe('/etc/kubernetes/cloud.conf');
          const mount = container.volumeMounts.find((m) => m.mountPath === cloudConfig);
          const volume = pod.spec.volumes.find((v) => v.name === mount?.name);
          expect(volume?.hostPath.path).toBe(cloudConfig);
          expect(node.files[cloudConfig as string]).toMatch(/^\[Global\]$/m);
        }
      },
    );

    it('advertises each kube-apiserver on its own node IP', () => {
      for (const node of controlPlane()) {
        const pod = podOf(node, KAS_PATH);
        const container = containerOf(pod);

        expect(flagValue(container.command, 'advertise-address')).toBe(node.ip);
        expect(container.livenessProbe.httpGet.host).toBe(node.ip);
        expect(
          pod.metadata.annotations?.['kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint'],
        ).toBe(`${node.ip}:6443`);
      }
    });

    it('names the cluster in the controller manager as the cloud config does', () => {
      for (const node of controlPlane()) {
        const clusterName = flagValue(containerOf(podOf(node, KCM_PATH)).command, 'cluster-name');

        expect(clusterName).toBeDefined();
        expect(fileOf(node, '/etc/kubernetes/cloud.conf')).toMatch(
          new RegExp(`^KubernetesClusterID = ${clusterName}$`, 'm'),
        );
      }
    });

    it('runs kubelet with --cloud-provider=aws from kubeadm-flags.env on every node', () => {
      for (const node of nodes) {
        const args = kubeadmArgs(fileOf(node, FLAGS_PATH));

        expect(flagValue(args, 'cloud-provider')).toBe('aws');
        expect(flagValue(args, 'cloud-config')).toBe('/etc/kubernetes/cloud.conf');
      }
    });

    it('gives every node a KubeletConfiguration that reads static pods from /etc/kubernetes/manifests', () => {
      for (const node of nodes) {
        const config = parseYaml(fileOf(node, '/var/lib/kubelet/config.yaml')) as Record<string, unknown>;

        expect(config).toMatchObject({
          apiVersion: 'kubelet.config.k8s.io/v1beta1',
          kind: 'KubeletConfiguration',
          staticPodPath: '/etc/kubernetes/manifests',
        });
      }
    });

    it('keeps static pod manifests off the workers', () => {
      for (const node of nodes.filter((n) => n.role === 'worker')) {
        expect(Object.keys(node.files).filter((f) => f.startsWith('/etc/kubernetes/manifests/'))).toEqual([]);
      }
    });
  },
);

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['2s', 2000],
    ['1.5s', 1500],
    ['1m', 60_000],
    [250, 250],
    [0, 0],
  ])('reads %j as %d ms', (input, ms) => {
    expect(DurationSchema.parse(input)).toBe(ms);
  });

  it.each([['2h'], ['2 s'], ['-1s'], [-5], ['soon'], [null]])('refuses %j', (input) => {
    expect(DurationSchema.safeParse(input).success).toBe(false);
  });
});

const KAS_MANIFEST = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.26.15
    command: [kube-apiserver, --advertise-address={{nodeIP}}]
`;

// biome-ignore lint/suspicious/noExplicitAny: bad specs are built by breaking a valid one in arbitrary ways
type RawSpec = any;

/** A small valid spec, for each test to break in one way. */
function validSpec(): RawSpec {
  return {
    kind: 'ClusterTwin',
    name: 'demo',
    kubernetesVersion: 'v1.26.15',
    cloud: { provider: 'aws', region: 'us-east-1', zones: ['us-east-1a', 'us-east-1b'] },
    nodeGroups: [
      { name: 'cp', count: 1, role: 'control-plane', files: { [KAS_PATH]: KAS_MANIFEST } },
      { name: 'worker', count: 2, role: 'worker', files: { [FLAGS_PATH]: 'KUBELET_KUBEADM_ARGS=""\n' } },
    ],
  };
}

function problemsOf(input: unknown): string {
  try {
    parseTwinSpec(input, 'demo.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(TwinSpecError);
    return (err as TwinSpecError).message;
  }
  throw new Error('the spec was accepted');
}

describe('parseTwinSpec', () => {
  it('accepts the small valid spec and fills in the defaults', () => {
    const spec = parseTwinSpec(validSpec());

    expect(spec.latencies.staticPodRestart).toBe(2000);
    expect(spec.faults).toEqual([]);
    expect(spec.cloud.missingInstances).toEqual([]);
  });

  it('reads a cloudLookupFails fault: from the start unless after says, for good unless duration says', () => {
    const input = validSpec();
    input.faults = [
      { kind: 'cloudLookupFails', node: 'worker-2', by: 'external', error: 'notFound' },
      {
        kind: 'cloudLookupFails',
        node: 'worker-1',
        by: 'both',
        error: 'unauthorized',
        after: '5s',
        duration: '20s',
      },
    ];

    expect(parseTwinSpec(input).faults).toEqual([
      { kind: 'cloudLookupFails', node: 'worker-2', by: 'external', error: 'notFound', after: 0 },
      {
        kind: 'cloudLookupFails',
        node: 'worker-1',
        by: 'both',
        error: 'unauthorized',
        after: 5000,
        duration: 20_000,
      },
    ]);
    input.faults = [{ kind: 'cloudLookupFails', node: 'worker-2', error: 'timeout' }];
    const problems = problemsOf(input);
    expect(problems).toMatch(
      /- faults\[0\]\.by: Invalid option: expected one of "external"\|"in-tree"\|"both"/,
    );
    expect(problems).toMatch(
      /- faults\[0\]\.error: Invalid option: expected one of "notFound"\|"unauthorized"/,
    );
  });

  it('adds the v prefix to a bare Kubernetes version', () => {
    const input = validSpec();
    input.kubernetesVersion = '1.26.15';

    expect(parseTwinSpec(input).kubernetesVersion).toBe('v1.26.15');
  });

  it.each<[string, (s: RawSpec) => void, RegExp]>([
    [
      'an unknown provider',
      (s) => {
        s.cloud.provider = 'digitalocean';
      },
      /- cloud\.provider: Invalid option: expected one of "aws"\|/,
    ],
    [
      'a bad version',
      (s) => {
        s.kubernetesVersion = 'v1.26';
      },
      /- kubernetesVersion: expected a Kubernetes version such as v1\.26\.15/,
    ],
    [
      'a node name used by two groups',
      (s) => {
        s.nodeGroups[1].names = ['cp-1', 'worker-2'];
        s.nodeGroups[1].count = 2;
      },
      /- nodeGroups\[1\]\.names: node cp-1 is defined twice/,
    ],
    [
      'two groups of the same name',
      (s) => {
        s.nodeGroups[1].name = 'cp';
        s.nodeGroups[1].names = ['w-1'];
      },
      /- nodeGroups\[1\]\.name: group cp is defined twice/,
    ],
    [
      'no control-plane group',
      (s) => {
        s.nodeGroups = [s.nodeGroups[1]];
      },
      /- nodeGroups: at least one control-plane node is required/,
    ],
    [
      'a control-plane group of no nodes',
      (s) => {
        s.nodeGroups[0].count = 0;
      },
      /- nodeGroups: at least one control-plane node is required/,
    ],
    [
      'a negative count',
      (s) => {
        s.nodeGroups[1].count = -1;
      },
      /- nodeGroups\[1\]\.count: Too small: expected number to be >=0/,
    ],
    [
      'a bad duration',
      (s) => {
        s.latencies = { podStart: '5 seconds' };
      },
      /- latencies\.podStart: expected a duration such as 500ms, 2s or 1m/,
    ],
    [
      'an unknown top-level field',
      (s) => {
        s.nodes = 3;
      },
      /- \(root\): Unrecognized key: "nodes"/,
    ],
    [
      'an unknown group field',
      (s) => {
        s.nodeGroups[1].replicas = 3;
      },
      /- nodeGroups\[1\]: Unrecognized key: "replicas"/,
    ],
    [
      'a relative file path',
      (s) => {
        s.nodeGroups[1].files['etc/default/kubelet'] = 'KUBELET_EXTRA_ARGS=\n';
      },
      /- nodeGroups\[1\]\.files\["etc\/default\/kubelet"\]: file paths must be absolute/,
    ],
    [
      'a file path climbing out of the node',
      (s) => {
        s.nodeGroups[1].files['/etc/../../../outside'] = 'x';
      },
      /- nodeGroups\[1\]\.files\["\/etc\/\.\.\/\.\.\/\.\.\/outside"\]: file paths must not contain \. or \.\. segments/,
    ],
    [
      'a directory as a file path',
      (s) => {
        s.nodeGroups[1].files['/etc/kubernetes/'] = 'x';
      },
      /- nodeGroups\[1\]\.files\["\/etc\/kubernetes\/"\]: a file path must name a file, not a directory/,
    ],
    [
      'file contents that are not text',
      (s) => {
        s.nodeGroups[1].files['/etc/default/kubelet'] = 42;
      },
      /- nodeGroups\[1\]\.files\["\/etc\/default\/kubelet"\]: expected the file contents as a string/,
    ],
    [
      'a file reference given to parseTwinSpec rather than loadTwinSpec',
      (s) => {
        s.nodeGroups[1].files['/etc/default/kubelet'] = { file: 'kubelet' };
      },
      /- nodeGroups\[1\]\.files\["\/etc\/default\/kubelet"\]: a \{ file: … \} reference is resolved only when the spec is loaded from its file/,
    ],
    [
      'a control plane without kube-apiserver',
      (s) => {
        s.nodeGroups[0].files = {
          '/etc/kubernetes/manifests/etcd.yaml': KAS_MANIFEST.replaceAll('kube-apiserver', 'etcd'),
        };
      },
      /- nodeGroups: no control-plane node runs kube-apiserver: add its static pod manifest \(\/etc\/kubernetes\/manifests\/kube-apiserver\.yaml\)/,
    ],
    [
      'kube-apiserver only on workers',
      (s) => {
        s.nodeGroups[1].files[KAS_PATH] = KAS_MANIFEST;
        s.nodeGroups[0].files = {};
      },
      /- nodeGroups: no control-plane node runs kube-apiserver/,
    ],
    [
      'a static pod manifest that is not a Pod',
      (s) => {
        s.nodeGroups[0].files['/etc/kubernetes/manifests/scheduler.yaml'] =
          'apiVersion: apps/v1\nkind: Deployment\n';
      },
      /- nodeGroups\[0\]\.files\["\/etc\/kubernetes\/manifests\/scheduler\.yaml"\]: static pod manifest is not a Pod the kubelet can run \(kind: /,
    ],
    [
      'a static pod manifest that is not YAML',
      (s) => {
        s.nodeGroups[0].files['/etc/kubernetes/manifests/etcd.yaml'] = 'spec: [containers';
      },
      /- nodeGroups\[0\]\.files\["\/etc\/kubernetes\/manifests\/etcd\.yaml"\]: static pod manifest is not valid YAML: .*line 1/,
    ],
    [
      'a zone outside the region',
      (s) => {
        s.cloud.zones = ['us-east-1a', 'eu-west-1b'];
      },
      /- cloud\.zones\[1\]: zone eu-west-1b is not in region us-east-1/,
    ],
    [
      'an instance in a zone the cloud does not have',
      (s) => {
        s.cloud.instances = { 'cp-1': { ip: '172.31.0.5', zone: 'us-east-1f' } };
      },
      /- cloud\.instances\["cp-1"\]\.zone: zone us-east-1f is not one of cloud\.zones/,
    ],
    [
      'an instance whose IP is not IPv4',
      (s) => {
        s.cloud.instances = { 'cp-1': { ip: 'fd00::5' } };
      },
      /- cloud\.instances\["cp-1"\]\.ip: /,
    ],
    [
      'the same zone twice',
      (s) => {
        s.cloud.zones = ['us-east-1a', 'us-east-1a'];
      },
      /- cloud\.zones: zones must be unique/,
    ],
    [
      'a group name that is no DNS label',
      (s) => {
        s.nodeGroups[1].name = 'Workers_A';
      },
      /- nodeGroups\[1\]\.name: must be a DNS label/,
    ],
  ])('names the field path of %s', (_, breakIt, expected) => {
    const input = validSpec();
    breakIt(input);

    expect(problemsOf(input)).toMatch(expected);
  });

  it('ignores hidden files in the static pod directory, as the kubelet does', () => {
    const input = validSpec();
    input.nodeGroups[0].files['/etc/kubernetes/manifests/.kube-apiserver.yaml.swp'] = '\u0000binary';

    expect(() => parseTwinSpec(input)).not.toThrow();
  });

  it('reports every problem of a spec at once, under its source', () => {
    const input = validSpec();
    input.cloud.provider = 'nope';
    input.nodeGroups[1].count = -2;

    const message = problemsOf(input);

    expect(message).toMatch(/^invalid twin spec demo\.yaml:\n/);
    expect(message).toMatch(/cloud\.provider/);
    expect(message).toMatch(/nodeGroups\[1\]\.count/);
  });

  it.each([[null], ['a string'], [[1, 2]], [42]])(
    'refuses %j as a whole spec with an error, not a crash',
    (input) => {
      expect(problemsOf(input)).toMatch(/- \(root\): /);
    },
  );
});

describe('loadTwinSpec', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-spec-'));
    await mkdir(path.join(dir, 'host'));
    await writeFile(path.join(dir, 'host', 'kube-apiserver.yaml'), KAS_MANIFEST);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function specFile(name: string, text: string): Promise<string> {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  }

  const SPEC_WITH_REF = (ref: string): string => `kind: ClusterTwin
name: demo
kubernetesVersion: v1.26.15
cloud: { provider: aws, region: us-east-1, zones: [us-east-1a] }
nodeGroups:
  - name: cp
    role: control-plane
    files:
      ${KAS_PATH}: { file: ${ref} }
`;

  it('replaces a file reference with that file, relative to the spec', async () => {
    const file = await specFile('ref.yaml', SPEC_WITH_REF('host/kube-apiserver.yaml'));

    const spec = await loadTwinSpec(file);

    expect(spec.nodeGroups[0]?.files[KAS_PATH]).toBe(KAS_MANIFEST);
  });

  it('names the field path of a file reference it cannot read', async () => {
    const file = await specFile('missing-ref.yaml', SPEC_WITH_REF('host/nope.yaml'));

    await expect(loadTwinSpec(file)).rejects.toThrow(
      /- nodeGroups\[0\]\.files\["\/etc\/kubernetes\/manifests\/kube-apiserver\.yaml"\]: cannot read host\/nope\.yaml: ENOENT/,
    );
  });

  it('reads an object of the cluster from a file, and names the path of one that is not YAML', async () => {
    await writeFile(
      path.join(dir, 'host', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\n',
    );
    await writeFile(path.join(dir, 'host', 'bad.yaml'), 'kind: [unclosed\n');
    const good = await specFile(
      'objects.yaml',
      `${SPEC_WITH_REF('host/kube-apiserver.yaml')}objects:\n  - file: host/cm.yaml\n`,
    );
    expect((await loadTwinSpec(good)).objects).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'kube-system' } },
    ]);
    const bad = await specFile(
      'bad-objects.yaml',
      `${SPEC_WITH_REF('host/kube-apiserver.yaml')}objects:\n  - file: host/bad.yaml\n`,
    );
    await expect(loadTwinSpec(bad)).rejects.toThrow(/- objects\[0\]: host\/bad\.yaml is not valid YAML/);
  });

  it('says a missing spec file cannot be read', async () => {
    const file = path.join(dir, 'absent.yaml');

    await expect(loadTwinSpec(file)).rejects.toThrow(
      new TwinSpecError(`cannot read twin spec ${file}: ENOENT`),
    );
  });

  it('says where a spec is not valid YAML', async () => {
    const file = await specFile('bad.yaml', 'kind: ClusterTwin\nnodeGroups: [\n  - name: cp\n');

    await expect(loadTwinSpec(file)).rejects.toThrow(
      /^twin spec .*bad\.yaml is not valid YAML: .*line \d+, column \d+$/,
    );
  });

  it('refuses a key given twice as invalid YAML', async () => {
    const file = await specFile('twice.yaml', 'kind: ClusterTwin\nname: a\nname: b\n');

    await expect(loadTwinSpec(file)).rejects.toThrow(/is not valid YAML: Map keys must be unique/);
  });

  it('refuses an empty spec file with the field path of the root', async () => {
    const file = await specFile('empty.yaml', '');

    await expect(loadTwinSpec(file)).rejects.toThrow(/- \(root\): /);
  });
});
