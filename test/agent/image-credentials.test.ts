/**
 * set-flags handing the kubelet's in-tree image credentials to the cloud's plugin, on a host root made of
 * the kubeadm v1.26 AWS node's real files (in-tree ECR credentials on: the gate is off by default in 1.26).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../lib/agent/protocol.ts';
import { runAgent } from '../../lib/agent/run.ts';

const HOSTS = new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/', import.meta.url);
const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
const CONFIG = '/etc/kubernetes/image-credential-provider-config.yaml';
const PLUGIN = '/etc/eks/image-credential-provider/ecr-credential-provider';

let root: string;
const hostPath = (file: string) => path.join(root, file);
const read = (file: string) => readFile(hostPath(file), 'utf8').catch(() => undefined);
async function put(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(hostPath(file)), { recursive: true });
  await writeFile(hostPath(file), text);
}

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-agent-creds-'));
  for (const file of [FLAGS_ENV, '/var/lib/kubelet/config.yaml']) {
    await put(file, await readFile(new URL(file.slice(1), HOSTS), 'utf8'));
  }
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const env = () => ({
  hostRoot: root,
  hostname: async () => 'ip-10-0-1-10',
  kubeletCommandLine: async () => undefined,
});
const flip = (minor: number, required = false): Promise<AgentResult> =>
  runAgent(
    {
      op: 'set-flags',
      runId: 'up-1',
      kubelet: {
        flags: { 'cloud-provider': 'external', 'cloud-config': null },
        featureGates: { DisableCloudProviders: null, DisableKubeletCloudCredentialProviders: null },
        imageCredentials: { provider: 'aws', minor, required },
      },
    },
    env(),
  );

describe('set-flags with imageCredentials', () => {
  it('writes the plugin config first and points the kubelet at the directory it found the plugin in; again, changes nothing', async () => {
    await put(PLUGIN, '#!/bin/sh\n');
    const first = await flip(26);
    expect(first.ok).toBe(true);
    expect(first.files.filter((f) => f.changed).map((f) => f.path)).toEqual([CONFIG, FLAGS_ENV]);
    const flags = await read(FLAGS_ENV);
    expect(flags).toContain(`--image-credential-provider-config=${CONFIG}`);
    expect(flags).toContain('--image-credential-provider-bin-dir=/etc/eks/image-credential-provider');
    const config = await read(CONFIG);
    expect(config).toContain('apiVersion: kubelet.config.k8s.io/v1\n');
    expect(config).toContain('- name: ecr-credential-provider');
    expect(config).toContain('"*.dkr.ecr.*.amazonaws.com"');

    const again = await flip(26);
    expect(again).toMatchObject({ ok: true, changed: false });
  });

  it('on 1.25 writes the v1beta1 config the kubelet of that minor reads', async () => {
    await put(PLUGIN, '#!/bin/sh\n');
    expect((await flip(25)).ok).toBe(true);
    expect(await read(CONFIG)).toContain('apiVersion: kubelet.config.k8s.io/v1beta1\n');
  });

  it('without the plugin: goes ahead where credentials stay or nothing requires them, else refuses with nothing changed', async () => {
    // 1.26 keeps its in-tree ECR credentials after the flip (the gate is off by default there).
    expect((await flip(26, true)).ok).toBe(true);
    expect(await read(CONFIG)).toBeUndefined();

    // A GCE kubelet of 1.30 with the gate set off: the flip takes it out, and the default (on) ends them.
    const gce = (provider: string, required: boolean) =>
      runAgent(
        {
          op: 'set-flags',
          runId: 'up-2',
          kubelet: {
            flags: { 'cloud-provider': 'external' },
            featureGates: { DisableKubeletCloudCredentialProviders: null },
            imageCredentials: { provider, minor: 30, required },
          },
        },
        env(),
      );
    await put(
      FLAGS_ENV,
      'KUBELET_KUBEADM_ARGS="--cloud-provider=gce --feature-gates=DisableKubeletCloudCredentialProviders=false"\n',
    );
    const refused = await gce('gcp', true);
    expect(refused).toMatchObject({ ok: false, changed: false });
    expect(refused.error).toContain('auth-provider-gcp is in none of /usr/local/bin');
    expect(await read(FLAGS_ENV)).toContain('--cloud-provider=gce');
    expect((await gce('gcp', false)).ok).toBe(true);
    expect(await read(FLAGS_ENV)).toBe('KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n');
    expect(await read(CONFIG)).toBeUndefined();
  });

  it('leaves a kubelet that already has a plugin config of its own alone', async () => {
    await put(PLUGIN, '#!/bin/sh\n');
    const own = (await read(FLAGS_ENV))?.replace(
      '--cloud-provider=aws',
      '--cloud-provider=aws --image-credential-provider-config=/etc/mine.yaml',
    );
    await put(FLAGS_ENV, own as string);
    const result = await flip(26);
    expect(result.ok).toBe(true);
    expect(await read(CONFIG)).toBeUndefined();
    expect(await read(FLAGS_ENV)).toContain('--image-credential-provider-config=/etc/mine.yaml');
  });
});
