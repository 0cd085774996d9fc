/** The agent bundle as nodes get it: one ES module that Node 22 runs with nothing else installed. */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { agentBundle } from '../../lib/agent/bundle.ts';
import { HOST_ROOT_ENV } from '../../lib/agent/main.ts';
import { AGENT_REQUEST_ENV, AgentResultSchema, TERMINATION_LOG_ENV } from '../../lib/agent/protocol.ts';

const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-bundle-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('is built once and is small enough for a ConfigMap', async () => {
  const first = agentBundle();
  expect(agentBundle()).toBe(first);
  const bundle = await first;
  expect(Buffer.byteLength(bundle)).toBeLessThan(512 * 1024);
  expect(bundle).not.toMatch(/from\s*["'](zod|yaml|diff)["']/);
});

it('runs under node, outside the repository, through a symlink as a ConfigMap mounts it, and answers an inspect', async () => {
  const kas = await readFile(
    new URL(`../../assets/twins/hosts/kubeadm-v1.26-aws${KAS}`, import.meta.url),
    'utf8',
  );
  await mkdir(path.join(dir, 'host/etc/kubernetes/manifests'), { recursive: true });
  await writeFile(path.join(dir, 'host', KAS), kas.replaceAll('{{nodeIP}}', '10.0.1.10'));
  await mkdir(path.join(dir, 'opt/..data'), { recursive: true });
  await writeFile(path.join(dir, 'opt/..data/agent.mjs'), await agentBundle());
  await promisify(execFile)('ln', ['-s', '..data/agent.mjs', path.join(dir, 'opt/agent.mjs')]);

  // nsenter into PID 1's namespaces needs root: this one records its arguments and runs the command.
  await mkdir(path.join(dir, 'bin'));
  const nsenter =
    '#!/bin/sh\necho "$@" >> "$0.calls"\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec "$@"\n';
  await writeFile(path.join(dir, 'bin/nsenter'), nsenter, { mode: 0o755 });

  const started = Date.now();
  await promisify(execFile)(process.execPath, [path.join(dir, 'opt/agent.mjs')], {
    cwd: dir,
    env: {
      PATH: `${path.join(dir, 'bin')}:${process.env.PATH}`,
      [HOST_ROOT_ENV]: path.join(dir, 'host'),
      [TERMINATION_LOG_ENV]: path.join(dir, 'termination-log'),
      [AGENT_REQUEST_ENV]: JSON.stringify({ op: 'inspect', runId: 'r', paths: [KAS] }),
    },
  });
  const elapsed = Date.now() - started;
  const result = AgentResultSchema.parse(
    JSON.parse(await readFile(path.join(dir, 'termination-log'), 'utf8')),
  );
  expect(result).toMatchObject({
    ok: true,
    files: [{ path: KAS, kind: 'static-pod', flags: { 'cloud-provider': 'aws' } }],
    host: { hostname: (await readFile('/proc/sys/kernel/hostname', 'utf8')).trim() },
  });
  expect(await readFile(path.join(dir, 'bin/nsenter.calls'), 'utf8')).toBe(
    '--target 1 --uts -- cat /proc/sys/kernel/hostname\n',
  );
  expect(elapsed).toBeLessThan(5000);
});
