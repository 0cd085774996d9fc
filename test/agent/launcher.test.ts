/**
 * The Job's launcher run as the container runs it (`node --input-type=module -e …`), against the real agent
 * bundle mounted as a ConfigMap mounts it, with a PATH that has nsenter or not.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { agentBundle } from '../../lib/agent/bundle.ts';
import { LAUNCHER_COMMAND } from '../../lib/agent/launcher.ts';
import { HOST_ROOT_ENV } from '../../lib/agent/main.ts';
import {
  AGENT_BUNDLE_ENV,
  AGENT_REQUEST_ENV,
  AGENT_SHA256_ENV,
  AgentResultSchema,
  TERMINATION_LOG_ENV,
} from '../../lib/agent/protocol.ts';

const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
const KUBEADM_FLAGS = 'KUBELET_KUBEADM_ARGS="--cloud-provider=aws"\n';
const TO_EXTERNAL = JSON.stringify({
  op: 'set-flags',
  runId: 'r',
  dryRun: false,
  kubelet: { flags: { 'cloud-provider': 'external' } },
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-launcher-'));
  await mkdir(path.join(dir, 'host/var/lib/kubelet'), { recursive: true });
  await writeFile(path.join(dir, 'host', FLAGS_ENV), KUBEADM_FLAGS);
  // nsenter as the image has it; the agent's own restart of the kubelet then runs this stand-in.
  await mkdir(path.join(dir, 'bin'));
  await writeFile(path.join(dir, 'bin/nsenter'), '#!/bin/sh\nexit 0\n');
  await chmod(path.join(dir, 'bin/nsenter'), 0o755);
  await mkdir(path.join(dir, 'empty-bin'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The bundle as the kubelet mounts a ConfigMap key: a symlink into `..data`. */
async function mountBundle(text: string): Promise<string> {
  await mkdir(path.join(dir, 'opt/..data'), { recursive: true });
  await writeFile(path.join(dir, 'opt/..data/agent.mjs'), text);
  await symlink('..data/agent.mjs', path.join(dir, 'opt/agent.mjs'));
  return path.join(dir, 'opt/agent.mjs');
}

async function launch(opts: { sha256: string; bundle: string; bin: string }) {
  const [, ...args] = LAUNCHER_COMMAND;
  const exitCode = await promisify(execFile)(process.execPath, args, {
    cwd: dir,
    env: {
      PATH: path.join(dir, opts.bin),
      [HOST_ROOT_ENV]: path.join(dir, 'host'),
      [TERMINATION_LOG_ENV]: path.join(dir, 'termination-log'),
      [AGENT_REQUEST_ENV]: TO_EXTERNAL,
      [AGENT_BUNDLE_ENV]: opts.bundle,
      [AGENT_SHA256_ENV]: opts.sha256,
    },
  }).then(
    () => 0,
    (err: { code?: number }) => err.code,
  );
  const answer = AgentResultSchema.parse(
    JSON.parse(await readFile(path.join(dir, 'termination-log'), 'utf8')),
  );
  return { exitCode, answer, flags: await readFile(path.join(dir, 'host', FLAGS_ENV), 'utf8') };
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

it('runs the bundle whose sha256 the Job names, with nsenter on PATH', async () => {
  const bundle = await agentBundle();
  const run = await launch({ sha256: sha256(bundle), bundle: await mountBundle(bundle), bin: 'bin' });
  expect(run.answer).toMatchObject({ op: 'set-flags', ok: true, changed: true, restartKubelet: true });
  expect(run.exitCode).toBe(0);
  expect(run.flags).toContain('--cloud-provider=external');
});

it('refuses a bundle that is not the one the Job names, and changes nothing', async () => {
  const bundle = await agentBundle();
  const tampered = `${bundle}\n// one line more\n`;
  const run = await launch({ sha256: sha256(bundle), bundle: await mountBundle(tampered), bin: 'bin' });
  expect(run.exitCode).toBe(1);
  expect(run.answer).toMatchObject({ op: 'set-flags', ok: false, changed: false, refused: 'bundle-sha256' });
  expect(run.answer.error).toContain(`has sha256 ${sha256(tampered)}, the Job expects ${sha256(bundle)}`);
  expect(run.flags).toBe(KUBEADM_FLAGS);
});

it('refuses to run on an image without nsenter, before reading the bundle', async () => {
  const bundle = await agentBundle();
  const run = await launch({ sha256: sha256(bundle), bundle: await mountBundle(bundle), bin: 'empty-bin' });
  expect(run.exitCode).toBe(1);
  expect(run.answer).toMatchObject({ ok: false, changed: false, refused: 'no-nsenter' });
  expect(run.answer.error).toContain('no nsenter on PATH');
  expect(run.flags).toBe(KUBEADM_FLAGS);
});
