/**
 * The real kubectl against the API server: get (table, -o yaml), apply --server-side, patch with each
 * --type, delete, describe (with its events field selector), and --chunk-size pagination.
 * kubectl runs asynchronously: the server lives in this process, so a blocking child would deadlock it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { writeKubeconfig } from '../../lib/twin/kubeconfig.ts';
import { type ApiHarness, startApiHarness } from './api-harness.ts';

const KUBECTL = '/usr/bin/kubectl';
const run = promisify(execFile);

describe.runIf(existsSync(KUBECTL))('kubectl', () => {
  let h: ApiHarness;
  let dir: string;

  /** Run kubectl; resolves with its output, rejects with stderr in the message when it fails. */
  async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
    try {
      return await run(KUBECTL, args, {
        // HOME holds kubectl's discovery cache: one per test run, not the user's.
        env: { PATH: process.env.PATH, HOME: dir, KUBECONFIG: path.join(dir, 'kubeconfig') },
        timeout: 20_000,
      });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr ?? e.message}`);
    }
  }

  async function manifest(name: string, text: string): Promise<string> {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  }

  beforeAll(async () => {
    h = await startApiHarness();
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-kubectl-'));
    await writeKubeconfig(path.join(dir, 'kubeconfig'), { name: 'twin', server: h.api.url });
  });
  afterAll(async () => {
    await h?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gets namespaces as a table and as YAML', async () => {
    const table = await kubectl('get', 'namespaces');
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+AGE$/);
    expect(table.stdout).toMatch(/^kube-system\s+\d+s$/m);
    const yaml = parseYaml((await kubectl('get', 'namespace', 'default', '-o', 'yaml')).stdout);
    expect(yaml).toMatchObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  });

  it('applies server-side without warnings, and again idempotently', async () => {
    const file = await manifest(
      'cm.yaml',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  labels: {app: demo}\ndata:\n  a: "1"\n',
    );
    const first = await kubectl('apply', '--server-side', '-f', file);
    expect(first.stdout.trim()).toBe('configmap/applied serverside-applied');
    expect(first.stderr).toBe('');
    await kubectl('apply', '--server-side', '-f', file);
    const cm = h.ctx.store.get('configmaps', 'default', 'applied');
    expect(cm.data).toEqual({ a: '1' });
    expect((cm.metadata.managedFields as { manager: string }[]).map((m) => m.manager)).toContain('kubectl');
  });

  it('patches with --type merge, strategic and json', async () => {
    await kubectl(
      'create',
      '-f',
      await manifest('p.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: patched\n'),
    );
    await kubectl('patch', 'configmap', 'patched', '--type=merge', '-p', '{"data":{"m":"1"}}');
    await kubectl('patch', 'configmap', 'patched', '--type=strategic', '-p', '{"data":{"s":"2"}}');
    await kubectl(
      'patch',
      'configmap',
      'patched',
      '--type=json',
      '-p',
      '[{"op":"add","path":"/data/j","value":"3"}]',
    );
    const data = (await kubectl('get', 'configmap', 'patched', '-o', 'jsonpath={.data}')).stdout;
    expect(JSON.parse(data)).toEqual({ m: '1', s: '2', j: '3' });
  });

  it('deletes', async () => {
    await kubectl(
      'create',
      '-f',
      await manifest('d.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deleted\n'),
    );
    expect((await kubectl('delete', 'configmap', 'deleted')).stdout.trim()).toBe(
      'configmap "deleted" deleted',
    );
    expect(h.ctx.store.tryGet('configmaps', 'default', 'deleted')).toBeUndefined();
  });

  it('pages with --chunk-size, the server seeing limit and continue', async () => {
    for (let i = 1; i <= 5; i++) {
      h.ctx.store.create('secrets', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `chunk-${i}`, namespace: 'default' },
      });
    }
    const before = h.api.stats().byVerb.list ?? 0;
    const { stdout, stderr } = await kubectl('get', 'secrets', '--chunk-size=2', '-v=6');
    expect(stdout.match(/^chunk-\d/gm)).toEqual(['chunk-1', 'chunk-2', 'chunk-3', 'chunk-4', 'chunk-5']);
    expect((h.api.stats().byVerb.list ?? 0) - before).toBe(3);
    expect(stderr).toMatch(/secrets\?limit=2 200/);
    expect(stderr).toMatch(/secrets\?continue=[^&\s]+&limit=2 200/);
  });

  it('describes a pod with its events', async () => {
    const pod = h.ctx.store.create('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'described', namespace: 'default', labels: { app: 'demo' } },
      spec: { nodeName: 'worker-1', containers: [{ name: 'main', image: 'nginx:1.25' }] },
    });
    h.ctx.store.create('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'described.1', namespace: 'default' },
      involvedObject: {
        kind: 'Pod',
        namespace: 'default',
        name: 'described',
        uid: pod.metadata.uid,
        apiVersion: 'v1',
      },
      reason: 'Scheduled',
      message: 'Successfully assigned default/described to worker-1',
      type: 'Normal',
      source: { component: 'default-scheduler' },
    });
    const { stdout } = await kubectl('describe', 'pod', 'described');
    expect(stdout).toMatch(/^Name:\s+described$/m);
    expect(stdout).toMatch(/^Node:\s+worker-1/m);
    expect(stdout).toMatch(/Image:\s+nginx:1\.25/);
    expect(stdout).toMatch(
      /Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned default\/described to worker-1/,
    );
  });

  it('reports the server error for what the server refuses', async () => {
    await expect(kubectl('get', 'pods', '--field-selector', 'spec.hostname=x')).rejects.toThrow(
      /field label not supported: spec.hostname/,
    );
    await expect(kubectl('get', 'configmap', 'nope')).rejects.toThrow(/configmaps "nope" not found/);
  });

  it('creates with its typed clients (protobuf bodies): a ConfigMap, a Secret, a Deployment, a Service', async () => {
    await kubectl('create', 'configmap', 'typed', '--from-literal=a=b');
    await kubectl('create', 'secret', 'generic', 'typed', '--from-literal=k=v');
    await kubectl(
      'create',
      'deployment',
      'typed',
      '--image=registry.k8s.io/pause:3.9',
      '--replicas=0',
      '--port=80',
    );
    await kubectl('create', 'service', 'clusterip', 'typed', '--tcp=80:8080');
    const cm = await h.core.readNamespacedConfigMap({ namespace: 'default', name: 'typed' });
    expect(cm.data).toEqual({ a: 'b' });
    const secret = await h.core.readNamespacedSecret({ namespace: 'default', name: 'typed' });
    expect(secret.data).toEqual({ k: Buffer.from('v').toString('base64') });
    const deploy = (await h
      .fetch('/apis/apps/v1/namespaces/default/deployments/typed')
      .then((r) => r.json())) as {
      spec: Record<string, unknown>;
    };
    // replicas 0 is kept (a pointer in Go), the zero values JSON leaves out are not there.
    expect(deploy.spec).toEqual({
      replicas: 0,
      selector: { matchLabels: { app: 'typed' } },
      strategy: {},
      template: {
        metadata: { labels: { app: 'typed' } },
        spec: {
          containers: [
            {
              name: 'pause',
              image: 'registry.k8s.io/pause:3.9',
              ports: [{ containerPort: 80 }],
              resources: {},
            },
          ],
        },
      },
    });
    const svc = await h.core.readNamespacedService({ namespace: 'default', name: 'typed' });
    expect(svc.spec?.ports).toEqual([{ name: '80-8080', port: 80, protocol: 'TCP', targetPort: 8080 }]);
  });

  it('scales a Deployment through its scale subresource, and answers auth can-i', async () => {
    await kubectl('create', 'deployment', 'scaled', '--image=registry.k8s.io/pause:3.9', '--replicas=0');
    await kubectl('scale', 'deployment', 'scaled', '--replicas=3');
    const scale = (await h
      .fetch('/apis/apps/v1/namespaces/default/deployments/scaled/scale')
      .then((r) => r.json())) as {
      kind: string;
      spec: { replicas: number };
      status: { selector: string };
    };
    expect(scale).toMatchObject({ kind: 'Scale', spec: { replicas: 3 }, status: { selector: 'app=scaled' } });
    expect((await kubectl('auth', 'can-i', 'delete', 'nodes')).stdout.trim()).toBe('yes');
  });
});
