/**
 * Backups and writes outlive a power cut (issue 15, item 7): the agent fsyncs the file before it renames
 * it into place and then the directory that holds it, the rename being durable only once the directory
 * is. Seen from outside, as the kernel sees it: the system calls of a real agent run under strace.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const STRACE = '/usr/bin/strace';
const AGENT = fileURLToPath(new URL('../../lib/agent/run.ts', import.meta.url));
const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(existsSync(STRACE))('the agent’s writes on disk', () => {
  it('fsyncs the backup and the new file, then their directories, around each rename', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-durability-'));
    const host = path.join(dir, 'host');
    await mkdir(path.join(host, path.dirname(FLAGS_ENV)), { recursive: true });
    await writeFile(path.join(host, FLAGS_ENV), 'KUBELET_KUBEADM_ARGS="--cloud-provider=aws"\n');
    const request = JSON.stringify({
      op: 'set-flags',
      runId: 'r',
      kubelet: { flags: { 'cloud-provider': 'external' } },
    });
    const { stderr } = await run(
      STRACE,
      [
        '-f',
        '-y',
        '-e',
        'trace=fsync,fdatasync,rename,renameat,renameat2',
        process.execPath,
        '-e',
        `import(${JSON.stringify(AGENT)}).then((m) => m.runAgent(JSON.parse(process.env.REQUEST), { hostRoot: process.env.HOST_ROOT, hostname: async () => 'node-1', kubeletCommandLine: async () => undefined }))`,
      ],
      { env: { ...process.env, REQUEST: request, HOST_ROOT: host } },
    );
    const calls = stderr.split('\n').filter((l) => /fsync|rename/.test(l) && l.includes(host));
    const backupDir = path.join(host, 'etc/kubernetes/ccm-migrate-backup/r/var/lib/kubelet');
    const flagsDir = path.join(host, 'var/lib/kubelet');
    const index = (re: RegExp) => calls.findIndex((l) => re.test(l));
    const backupRename = index(/rename.*ccm-migrate-backup\/r\/var\/lib\/kubelet\/kubeadm-flags.env"/);
    const writeRename = index(new RegExp(`rename.*"${flagsDir}/kubeadm-flags.env"`));
    expect(backupRename, calls.join('\n')).toBeGreaterThan(-1);
    expect(writeRename, calls.join('\n')).toBeGreaterThan(backupRename);
    // Before each rename the file itself, after it its directory.
    expect(calls.slice(0, backupRename).some((l) => /fsync.*ccm-migrate-backup.*kubeadm-flags/.test(l))).toBe(
      true,
    );
    expect(
      calls
        .slice(backupRename, writeRename)
        .some((l) => l.includes(`fsync(`) && l.includes(`<${backupDir}>`)),
    ).toBe(true);
    expect(calls.slice(backupRename, writeRename).some((l) => /fsync.*\.kubeadm-flags\.env\./.test(l))).toBe(
      true,
    );
    expect(calls.slice(writeRename).some((l) => l.includes('fsync(') && l.includes(`<${flagsDir}>`))).toBe(
      true,
    );
  });
});
