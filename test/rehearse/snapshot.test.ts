/**
 * `twin snapshot` of a running twin (AWS with three control-plane nodes, GCE with one), served again as a
 * twin: the same nodes, labels, taints, providerIDs, addresses and flags, every node file byte for byte but
 * the placeholders, and none of a planted secret anywhere in what it wrote.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import { PLACEHOLDER_MARK } from '../../lib/rehearse/placeholders.ts';
import { nodeRoot } from '../../lib/twin/context.ts';
import { writeKubeconfig } from '../../lib/twin/kubeconfig.ts';
import { loadTwinSpec, parseTwinSpec, type TwinSpec } from '../../lib/twin/spec.ts';
import { inProcessCli } from '../cli/in-process-cli.ts';
import {
  CLOUD_CONF,
  eventually,
  FIXTURES,
  fixtureSpec,
  isReady,
  startTestTwin,
  type TestTwin,
} from '../twin/running-twin.ts';

const fixture = (name: string): string =>
  fileURLToPath(new URL(`../fixtures/twins/${name}`, import.meta.url));

/** Planted where a snapshot must never look: a cloud config, a key, a Secret. */
const SECRET = 'planted-secret-value-93d1e7';
const KEY = '/etc/kubernetes/pki/apiserver.key';

/** What the source twin gets on top of its fixture: the secret, an operator's label and taint, a Service. */
async function sourceSpec(file: string, cloudConf: string): Promise<TwinSpec> {
  const spec = await fixtureSpec(file);
  const nodeGroups = spec.nodeGroups.map((g) => ({
    ...g,
    files: { ...g.files, [cloudConf]: `${g.files[cloudConf]}# ${SECRET}\n`, [KEY]: SECRET },
    ...(g.role === 'worker'
      ? {
          labels: { 'example.com/pool': 'blue' },
          taints: [{ key: 'example.com/dedicated', value: 'batch', effect: 'NoSchedule' as const }],
        }
      : {}),
  }));
  const objects = [
    ...spec.objects,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cloud-credentials', namespace: 'kube-system' },
      data: { key: Buffer.from(SECRET).toString('base64') },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'shop', namespace: 'default' },
      spec: { type: 'LoadBalancer', selector: { app: 'shop' }, ports: [{ port: 80, protocol: 'TCP' }] },
    },
  ];
  return parseTwinSpec({ ...spec, nodeGroups, objects }, file);
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** What the API says of each node: what a snapshot must reproduce. */
async function nodeView(t: TestTwin) {
  const nodes = (await t.core.listNode()).items;
  return Object.fromEntries(
    nodes.map((n) => [
      n.metadata?.name,
      {
        labels: n.metadata?.labels,
        taints: n.spec?.taints,
        providerID: n.spec?.providerID,
        addresses: n.status?.addresses,
      },
    ]),
  );
}

/** The control plane's flags as its mirror pods run them. */
async function mirrorCommands(t: TestTwin) {
  const pods = (await t.core.listNamespacedPod({ namespace: 'kube-system' })).items;
  return Object.fromEntries(
    pods
      .filter((p) => p.metadata?.annotations?.['kubernetes.io/config.mirror'])
      .map((p) => [p.metadata?.name, p.spec?.containers.map((c) => c.command)]),
  );
}

const cli = inProcessCli('snapshot');
const running: TestTwin[] = [];
afterAll(async () => {
  await Promise.all(running.map((t) => t.stop()));
});

/** What preflight's storage inventory reads, as names and the state it checks. */
async function storageView(t: TestTwin) {
  const names = (items: { metadata?: { name?: string } }[]) => items.map((i) => i.metadata?.name).sort();
  return {
    volumes: (await t.core.listPersistentVolume()).items
      .map((v) => `${v.metadata?.name} ${v.status?.phase}`)
      .sort(),
    claims: (await t.core.listPersistentVolumeClaimForAllNamespaces()).items
      .map((c) => `${c.metadata?.namespace}/${c.metadata?.name} ${c.status?.phase} ${c.spec?.volumeName}`)
      .sort(),
    classes: names((await t.storage.listStorageClass()).items),
    drivers: names((await t.storage.listCSIDriver()).items),
    attachments: (await t.storage.listVolumeAttachment()).items
      .map((a) => `${a.metadata?.name} ${a.spec?.nodeName} ${a.status?.attached}`)
      .sort(),
    registered: (await t.storage.listCSINode()).items
      .map((n) => `${n.metadata?.name}: ${(n.spec?.drivers ?? []).map((d) => d.name).join(',')}`)
      .sort(),
  };
}

describe.each([
  { fixture: 'aws-ha-mini.yaml', cloudConf: CLOUD_CONF },
  { fixture: 'gcp-mini.yaml', cloudConf: '/etc/gce.conf' },
  { fixture: 'openstack-secret-mini.yaml', cloudConf: CLOUD_CONF },
])('twin snapshot of $fixture', ({ fixture: file, cloudConf }) => {
  it('serves as a twin with the same nodes, flags and node files, and holds no secret', async () => {
    const sourceSpecified = await sourceSpec(fixture(file), cloudConf);
    const source = await startTestTwin(sourceSpecified);
    running.push(source);
    const out = path.join(cli.dir, 'snapshot.yaml');

    const code = await main(['twin', 'snapshot', '--kubeconfig', source.twin.kubeconfigPath, '--out', out]);

    expect(cli.out).toContain('read-only');
    expect(code).toBe(EXIT.ok);
    const written = [out, ...(await filesUnder(path.join(cli.dir, 'snapshot.files')))];
    // The planted value, and every Secret's data as the API holds it (base64) and as it decodes.
    const secretData = sourceSpecified.objects
      .filter((o) => o.kind === 'Secret')
      .flatMap((o) => Object.values((o.data ?? {}) as Record<string, string>))
      .flatMap((b64) => [b64, Buffer.from(b64, 'base64').toString()]);
    expect(secretData.length).toBeGreaterThan(1);
    for (const f of written) {
      const text = await readFile(f, 'utf8');
      for (const value of [SECRET, ...secretData]) expect(text).not.toContain(value);
    }
    const spec = await loadTwinSpec(out);
    const copy = await startTestTwin(parseTwinSpec({ ...spec, latencies: source.twin.spec.latencies }));
    running.push(copy);

    expect(await nodeView(copy)).toEqual(await nodeView(source));
    expect(await mirrorCommands(copy)).toEqual(await mirrorCommands(source));
    // OpenStack's credentials Secret, by name: the same name, a placeholder value.
    const sourceSecrets = (await source.core.listNamespacedSecret({ namespace: 'kube-system' })).items;
    if (sourceSecrets.some((x) => x.metadata?.name === 'openstack-credentials')) {
      const copied = await copy.core.readNamespacedSecret({
        name: 'openstack-credentials',
        namespace: 'kube-system',
      });
      expect(copied.metadata?.annotations?.['ccm-migrate/twin-placeholder']).toBe('true');
    }
    // Its storage as preflight inventories it: volumes and claims bound, classes, drivers, attachments,
    // and each node's registered CSI drivers (aws-ha-mini and gcp-mini carry in-tree volumes).
    expect(await storageView(copy)).toEqual(await storageView(source));
    if (file !== 'openstack-secret-mini.yaml') {
      expect((await storageView(source)).volumes.length).toBeGreaterThan(0);
    }
    const lb = await copy.core.readNamespacedService({ name: 'shop', namespace: 'default' });
    expect(lb.spec?.type).toBe('LoadBalancer');
    const controlPlane = new Set(
      spec.nodeGroups.filter((g) => g.role === 'control-plane').flatMap((g) => g.names),
    );
    for (const node of Object.keys(await nodeView(source))) {
      const root = nodeRoot(source.twin.stateDir, node);
      for (const f of await filesUnder(root)) {
        const hostFile = `/${path.relative(root, f)}`;
        const theirs = (await readFile(f)).toString();
        const ours = await readFile(path.join(nodeRoot(copy.twin.stateDir, node), hostFile), 'utf8').catch(
          () => 'absent',
        );
        const plugin = /credential-provider|auth-provider/.test(hostFile);
        // A cloud config that no component of a worker names (GCE's kubelet takes none) is not copied.
        const cloudConfig = hostFile === cloudConf && (controlPlane.has(node) ? 'named' : 'maybe');
        if (hostFile === KEY) expect(ours).toBe('absent');
        else if (plugin || cloudConfig === 'named') expect(ours).toContain(PLACEHOLDER_MARK);
        else if (cloudConfig === 'maybe') expect(ours).toMatch(new RegExp(`${PLACEHOLDER_MARK}|^absent$`));
        else expect({ hostFile, text: ours }).toEqual({ hostFile, text: theirs });
      }
    }
    // Identical workers share one group.
    expect(spec.nodeGroups.filter((g) => g.role === 'worker')).toHaveLength(1);
  });
});

describe('twin snapshot of a cluster it cannot read', () => {
  it('exits 4 when the API server does not answer, writing nothing', async () => {
    const kubeconfig = path.join(cli.dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, { name: 'gone', server: 'http://127.0.0.1:1' });
    const out = path.join(cli.dir, 'snapshot.yaml');

    const code = await main(['twin', 'snapshot', '--kubeconfig', kubeconfig, '--out', out]);

    expect(code).toBe(EXIT.unreachable);
    expect(cli.out).toMatch(/ClusterUnreachable: .*127\.0\.0\.1:1/);
    expect(cli.out).not.toMatch(/at .*\.ts:\d+/);
    await expect(readFile(out)).rejects.toThrow(/ENOENT/);
  });

  it('exits 5 naming a node that is not Ready, before any agent Job', async () => {
    const spec = await fixtureSpec(FIXTURES.awsMini, {
      overrides: { faults: [{ kind: 'nodeNeverReturns', node: 'worker-1' }] },
    });
    const t = await startTestTwin(spec);
    running.push(t);
    await t.twin.nodes.restartKubelet('worker-1');
    await eventually(async () => !isReady(await t.core.readNode({ name: 'worker-1' })), {
      what: 'worker-1 NotReady',
    });

    const code = await main([
      'twin',
      'snapshot',
      '--kubeconfig',
      t.twin.kubeconfigPath,
      '--out',
      path.join(cli.dir, 's.yaml'),
    ]);

    expect(code).toBe(EXIT.agentFailed);
    expect(cli.out).toMatch(/worker-1 not Ready: the node agent cannot run there/);
    expect((await t.batch.listNamespacedJob({ namespace: 'kube-system' })).items).toEqual([]);
  });
});
