/**
 * The real-node entry point with a temp host root and termination log (through its environment) and a
 * recorded command runner standing in for nsenter/systemctl.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  agentMain,
  HOST_ROOT_ENV,
  HOSTNAME_COMMAND,
  PROC_ENV,
  RESTART_KUBELET_COMMAND,
} from '../../lib/agent/main.ts';
import { AGENT_REQUEST_ENV, AgentResultSchema, TERMINATION_LOG_ENV } from '../../lib/agent/protocol.ts';

const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
const KUBEADM_FLAGS =
  'KUBELET_KUBEADM_ARGS="--cloud-provider=aws --pod-infra-container-image=registry.k8s.io/pause:3.9"\n';

let dir: string;
let env: NodeJS.ProcessEnv;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-agent-main-'));
  await mkdir(path.join(dir, 'host/var/lib/kubelet'), { recursive: true });
  await writeFile(path.join(dir, 'host', FLAGS_ENV), KUBEADM_FLAGS);
  env = { [HOST_ROOT_ENV]: path.join(dir, 'host'), [TERMINATION_LOG_ENV]: path.join(dir, 'termination-log') };
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const answer = async () =>
  AgentResultSchema.parse(JSON.parse(await readFile(path.join(dir, 'termination-log'), 'utf8')));
const toExternal = JSON.stringify({
  op: 'set-flags',
  runId: 'r',
  kubelet: { flags: { 'cloud-provider': 'external' } },
});

it('writes the answer to the termination log, then restarts the kubelet from the host’s namespaces', async () => {
  const commands: (readonly string[])[] = [];
  const code = await agentMain({ ...env, [AGENT_REQUEST_ENV]: toExternal }, async (command) => {
    commands.push(command);
    // The answer is already on disk when the kubelet goes down.
    expect((await answer()).changed).toBe(true);
    return '';
  });
  expect(code).toBe(0);
  expect(commands).toEqual([RESTART_KUBELET_COMMAND]);
  expect(await answer()).toMatchObject({ ok: true, restartKubelet: true });
  expect(await readFile(path.join(dir, 'host', FLAGS_ENV), 'utf8')).toContain('--cloud-provider=external');
});

it('does not restart the kubelet when nothing asks for it, and reads the host’s name from its UTS namespace', async () => {
  const commands: (readonly string[])[] = [];
  const inspect = JSON.stringify({ op: 'inspect', runId: 'r' });
  const run = async (c: readonly string[]) => {
    commands.push(c);
    return 'IP-10-0-1-10\n';
  };
  expect(await agentMain({ ...env, [AGENT_REQUEST_ENV]: inspect }, run)).toBe(0);
  expect(commands).toEqual([HOSTNAME_COMMAND]);
  expect(await answer()).toMatchObject({ host: { hostname: 'IP-10-0-1-10' } });
  expect((await answer()).files.map((f) => f.path)).toEqual([FLAGS_ENV]);
});

it('finds the kubelet among the host’s processes by name and reports the flags on its command line', async () => {
  const proc = path.join(dir, 'proc');
  const processes: Record<string, [string, string[]]> = {
    '1': ['systemd', ['/sbin/init']],
    '812': ['kubelet', ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml', '--cloud-provider=aws']],
    '90': ['containerd', ['/usr/bin/containerd', '--cloud-provider=nope']],
  };
  for (const [pid, [comm, argv]] of Object.entries(processes)) {
    await mkdir(path.join(proc, pid), { recursive: true });
    await writeFile(path.join(proc, pid, 'comm'), `${comm}\n`);
    await writeFile(path.join(proc, pid, 'cmdline'), `${argv.join('\0')}\0`);
  }
  await mkdir(path.join(proc, 'self'));
  const inspect = JSON.stringify({ op: 'inspect', runId: 'r' });
  expect(
    await agentMain({ ...env, [PROC_ENV]: proc, [AGENT_REQUEST_ENV]: inspect }, async () => 'node-1'),
  ).toBe(0);
  expect((await answer()).kubeletFlags).toEqual({
    running: { 'cloud-provider': ['aws'] },
    files: { 'cloud-provider': ['aws'] },
  });
});

/** A fake /proc holding these processes: pid → [comm, argv]. */
async function fakeProc(processes: Record<string, [string, string[]]>): Promise<string> {
  const proc = path.join(dir, 'proc');
  await rm(proc, { recursive: true, force: true });
  for (const [pid, [comm, argv]] of Object.entries(processes)) {
    await mkdir(path.join(proc, pid), { recursive: true });
    await writeFile(path.join(proc, pid, 'comm'), `${comm}\n`);
    await writeFile(path.join(proc, pid, 'cmdline'), `${argv.join('\0')}\0`);
  }
  return proc;
}

it('answers a flip with the flags of the kubelet it restarted, not of the one before', async () => {
  const proc = await fakeProc({ '812': ['kubelet', ['/usr/bin/kubelet', '--cloud-provider=aws']] });
  const code = await agentMain({ ...env, [PROC_ENV]: proc, [AGENT_REQUEST_ENV]: toExternal }, async () => {
    // Before the restart the answer holds the old process's flags beside the files' new ones.
    expect((await answer()).kubeletFlags).toEqual({
      running: { 'cloud-provider': ['aws'] },
      files: { 'cloud-provider': ['external'] },
    });
    await fakeProc({ '901': ['kubelet', ['/usr/bin/kubelet', '--cloud-provider=external']] });
    return '';
  });

  expect(code).toBe(0);
  expect((await answer()).kubeletFlags).toEqual({
    running: { 'cloud-provider': ['external'] },
    files: { 'cloud-provider': ['external'] },
  });
});

it('exits 1 with the reason when the request is not JSON, the agent refuses, or the restart fails', async () => {
  expect(await agentMain({ ...env, [AGENT_REQUEST_ENV]: '{op: inspect' })).toBe(1);
  expect((await answer()).error).toBe(`invalid agent request: ${AGENT_REQUEST_ENV} is not set to JSON`);
  expect(await agentMain(env)).toBe(1);

  // Another run's: a restore of the kubelet's flags marks its run restored, and the flip below would be
  // refused as a late one of the same run.
  const missing = JSON.stringify({ op: 'restore', runId: 'other', paths: [FLAGS_ENV] });
  expect(await agentMain({ ...env, [AGENT_REQUEST_ENV]: missing })).toBe(1);
  expect((await answer()).error).toBe(`${FLAGS_ENV}: run other has no backup of it`);

  const code = await agentMain({ ...env, [AGENT_REQUEST_ENV]: toExternal }, async () => {
    throw new Error('Command failed: nsenter …\nFailed to restart kubelet.service: Unit not found.');
  });
  expect(code).toBe(1);
  expect(await answer()).toMatchObject({
    ok: false,
    changed: true,
    restartKubelet: true,
    error: 'restarting the kubelet failed: Command failed: nsenter …',
  });
});
