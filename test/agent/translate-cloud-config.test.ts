/**
 * The agent's `translate-cloud-config` against a host root: the copy written next to the original with an
 * "absent" backup (so the run's restore removes it), idempotent, a dry run that writes nothing, and a file
 * it cannot parse refused by name, never by content.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BACKUP_DIR } from '../../lib/agent/files.ts';
import type { AgentRequest } from '../../lib/agent/protocol.ts';
import { runAgent } from '../../lib/agent/run.ts';

const SOURCE = '/etc/kubernetes/cloud.conf';
const TARGET = '/etc/kubernetes/cloud.conf.external';
const LEGACY = `[Global]
auth-url = https://keystone.example:5000/v3
secret-name = openstack-credentials
secret-namespace = kube-system

[BlockStorage]
bs-version = v3
`;
const TRANSLATE: AgentRequest = {
  op: 'translate-cloud-config',
  runId: 'up-1',
  provider: 'openstack',
  source: SOURCE,
  target: TARGET,
};

let root: string;
const hostPath = (file: string): string => path.join(root, file);
const exists = (file: string): Promise<boolean> =>
  stat(hostPath(file)).then(
    () => true,
    () => false,
  );
const run = (request: AgentRequest) =>
  runAgent(request, {
    hostRoot: root,
    hostname: async () => 'node-1',
    kubeletCommandLine: async () => undefined,
  });

async function put(file: string, text: string, mode = 0o644): Promise<void> {
  await mkdir(path.dirname(hostPath(file)), { recursive: true });
  await writeFile(hostPath(file), text);
  await chmod(hostPath(file), mode);
}

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-translate-'));
  await put(SOURCE, LEGACY);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('translate-cloud-config', () => {
  it('writes the copy with the original’s mode, keeps the original, and names the Secret without a diff', async () => {
    const result = await run(TRANSLATE);
    expect(result).toMatchObject({
      ok: true,
      changed: true,
      restartKubelet: false,
      credentialsSecret: { name: 'openstack-credentials', namespace: 'kube-system' },
    });
    expect(result.files).toEqual([
      expect.objectContaining({
        path: TARGET,
        exists: true,
        changed: true,
        backup: `${BACKUP_DIR}/up-1${TARGET}`,
      }),
    ]);
    expect(result.files[0]?.diff).toBeUndefined();
    expect(JSON.stringify(result)).not.toContain('keystone');
    const copy = await readFile(hostPath(TARGET), 'utf8');
    expect(copy).toContain('clouds-file = /etc/openstack/secret/clouds.yaml');
    expect(copy).not.toMatch(/secret-name|BlockStorage/);
    expect(await readFile(hostPath(SOURCE), 'utf8')).toBe(LEGACY);
    expect((await stat(hostPath(TARGET))).mode & 0o777).toBe(0o644);
  });

  it('changes nothing the second time, and the run’s restore removes the copy', async () => {
    await run(TRANSLATE);
    const again = await run(TRANSLATE);
    expect(again).toMatchObject({ ok: true, changed: false });
    expect(again.files[0]).toMatchObject({ path: TARGET, changed: false });

    const restored = await run({ op: 'restore', runId: 'up-1', paths: [TARGET] });
    expect(restored).toMatchObject({ ok: true, changed: true });
    expect(restored.files[0]?.diff).toBeUndefined();
    expect(await exists(TARGET)).toBe(false);
    expect(await readFile(hostPath(SOURCE), 'utf8')).toBe(LEGACY);
  });

  it('rewrites a copy that drifted from its original', async () => {
    await run(TRANSLATE);
    await writeFile(hostPath(TARGET), '[Global]\n');
    expect(await run(TRANSLATE)).toMatchObject({ ok: true, changed: true });
    expect(await readFile(hostPath(TARGET), 'utf8')).toContain('use-clouds = true');
  });

  it('on a dry run names the Secret and writes nothing', async () => {
    const result = await run({ ...TRANSLATE, dryRun: true });
    expect(result).toMatchObject({
      ok: true,
      changed: false,
      credentialsSecret: { name: 'openstack-credentials' },
    });
    expect(await exists(TARGET)).toBe(false);
    expect(await exists(`${BACKUP_DIR}/up-1`)).toBe(false);
  });

  it('writes nothing for a config that names no Secret', async () => {
    await put(SOURCE, '[Global]\nauth-url = https://k\n');
    const result = await run(TRANSLATE);
    expect(result).toEqual({
      op: 'translate-cloud-config',
      ok: true,
      changed: false,
      restartKubelet: false,
      files: [],
    });
    expect(await exists(TARGET)).toBe(false);
  });

  it('refuses a file it cannot parse, naming the file and not its content', async () => {
    await put(SOURCE, '[Global]\npassword = hunter2\\\n');
    const result = await run(TRANSLATE);
    expect(result.ok).toBe(false);
    expect(result.error).toBe(`${SOURCE}: line 2 is not an INI section header, key or comment`);
    expect(await exists(TARGET)).toBe(false);
  });

  it('refuses a missing original and a copy over the original', async () => {
    expect((await run({ ...TRANSLATE, source: '/etc/none.conf' })).error).toBe(
      '/etc/none.conf: no such file',
    );
    expect((await run({ ...TRANSLATE, target: SOURCE })).ok).toBe(false);
    expect(await readFile(hostPath(SOURCE), 'utf8')).toBe(LEGACY);
  });
});
