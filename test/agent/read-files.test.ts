/**
 * `read-files` against a host root made of a kubeadm v1.26 control-plane node's real files
 * (assets/twins/hosts/kubeadm-v1.26-aws) plus a cloud config, a key and a credential plugin holding a
 * known secret: what it lists, that chunks put each file back together, and that the secret never leaves.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AgentResult, TERMINATION_MESSAGE_LIMIT } from '../../lib/agent/protocol.ts';
import { runAgent } from '../../lib/agent/run.ts';
import { renderHostFile } from '../../lib/twin/spec.ts';

const HOSTS = fileURLToPath(new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/', import.meta.url));
const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const CLOUD_CONF = '/etc/kubernetes/cloud.conf';
const PLUGIN = '/usr/local/bin/ecr-credential-provider';
const KEY = '/etc/kubernetes/pki/apiserver.key';
const SECRET = 'planted-secret-4f1c9a';
const NODE = { nodeName: 'cp-1', nodeIP: '10.0.0.11' };

let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-read-files-'));
  for (const dir of ['etc', 'usr', 'var'])
    await cp(path.join(HOSTS, dir), path.join(root, dir), { recursive: true });
  // The example's files are templates: make them this node's, as the twin writes them.
  for (const file of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!file.isFile()) continue;
    const p = path.join(file.parentPath, file.name);
    await writeFile(p, renderHostFile(await readFile(p, 'utf8'), { ...NODE, index: 0 }));
  }
  await writeFile(path.join(root, CLOUD_CONF), `[Global]\nKubernetesClusterID = ${SECRET}\n`);
  await mkdir(path.join(root, path.dirname(KEY)), { recursive: true });
  await writeFile(path.join(root, KEY), SECRET);
  await mkdir(path.join(root, path.dirname(PLUGIN)), { recursive: true });
  await writeFile(path.join(root, PLUGIN), `#!/bin/sh\n# ${SECRET}\n`);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const env = () => ({
  hostRoot: root,
  hostname: async () => NODE.nodeName,
  kubeletCommandLine: async () => undefined,
});

const ask = (chunk?: { path: string; offset: number }): Promise<AgentResult> =>
  runAgent({ op: 'read-files', runId: 'snap-1', template: NODE, ...(chunk ? { chunk } : {}) }, env());

async function readWhole(file: string): Promise<{ text: string; answers: AgentResult[] }> {
  const answers: AgentResult[] = [];
  let text = '';
  for (;;) {
    const answer = await ask({ path: file, offset: text.length });
    answers.push(answer);
    text += answer.chunk?.text ?? '';
    if (!answer.chunk || text.length >= answer.chunk.length) return { text, answers };
  }
}

describe('read-files', () => {
  it('lists the static pods and kubelet sources, and only names the cloud config and the plugin', async () => {
    const list = await ask();

    expect(list.ok).toBe(true);
    expect(list.files.map((f) => f.path)).toEqual(
      expect.arrayContaining([
        KAS,
        '/etc/kubernetes/manifests/etcd.yaml',
        '/var/lib/kubelet/kubeadm-flags.env',
        '/var/lib/kubelet/config.yaml',
        '/etc/default/kubelet',
        '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf',
      ]),
    );
    const listed = list.files.map((f) => f.path);
    expect(listed).not.toContain(CLOUD_CONF);
    expect(listed).not.toContain(KEY);
    expect(listed).not.toContain(PLUGIN);
    expect(list.withheld).toEqual(
      expect.arrayContaining([
        { path: CLOUD_CONF, kind: 'cloud-config' },
        { path: PLUGIN, kind: 'credential-plugin' },
      ]),
    );
  });

  it('gives a manifest back in chunks that fit the termination message, templated with the node', async () => {
    const original = await readFile(path.join(root, KAS), 'utf8');
    const listed = (await ask()).files.find((f) => f.path === KAS);

    const { text, answers } = await readWhole(KAS);

    expect(answers.length).toBeGreaterThan(1);
    for (const a of answers)
      expect(Buffer.byteLength(JSON.stringify(a))).toBeLessThanOrEqual(TERMINATION_MESSAGE_LIMIT);
    expect(text).toContain('--advertise-address={{nodeIP}}');
    expect(renderHostFile(text, { ...NODE, index: 0 })).toBe(original);
    expect(answers.every((a) => a.chunk?.sha256 === listed?.sha256)).toBe(true);
  });

  it('refuses a chunk of a file it does not read (a cloud config, a key), naming no content', async () => {
    for (const file of [CLOUD_CONF, KEY, PLUGIN, '/etc/shadow']) {
      const answer = await ask({ path: file, offset: 0 });

      expect(answer.ok).toBe(false);
      expect(answer.error).toMatch(/not a file read-files reads/);
    }
  });

  it('does not follow a kubelet flag that points into /etc/kubernetes/pki', async () => {
    await writeFile(
      path.join(root, '/etc/default/kubelet'),
      `KUBELET_EXTRA_ARGS=--image-credential-provider-config=${KEY}\n`,
    );

    const list = await ask();

    expect(list.files.map((f) => f.path)).not.toContain(KEY);
    expect(JSON.stringify(list)).not.toContain(SECRET);
  });

  it('never answers with the secret of a cloud config, a key or a plugin', async () => {
    const list = await ask();
    const chunks = await Promise.all(list.files.map((f) => readWhole(f.path)));

    expect(JSON.stringify([list, ...chunks.flatMap((c) => c.answers)])).not.toContain(SECRET);
  });
});
