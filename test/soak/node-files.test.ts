/**
 * The soak's hash of every node file (bench/soak/node-files.ts). Seed 1014, under load: a restore still
 * running removed a file between the listing and the read, and the ENOENT ended the scenario as a finding
 * of the soak itself. A file gone by the time it is read is absent from the hashes; other read errors
 * still throw.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';

const gone = new Set<string>();
vi.mock('node:fs/promises', async (original) => {
  const real = await original<typeof import('node:fs/promises')>();
  return {
    ...real,
    // As if removed right after readdir listed it.
    readFile: (async (file: string, ...rest: unknown[]) => {
      if (gone.has(file))
        throw Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), {
          code: 'ENOENT',
        });
      return (real.readFile as (...a: unknown[]) => Promise<Buffer>)(file, ...rest);
    }) as typeof real.readFile,
  };
});

const { hashNodeFiles } = await import('../../bench/soak/node-files.ts');

let dir: string | undefined;
afterEach(async () => {
  gone.clear();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('leaves out a file removed between the listing and the read, and hashes the others', async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-node-files-'));
  const etc = path.join(dir, 'nodes', 'worker-9', 'etc', 'kubernetes');
  await mkdir(etc, { recursive: true });
  await writeFile(path.join(etc, 'kubelet.conf'), 'kept');
  await writeFile(path.join(etc, 'image-credential-provider-config.yaml'), 'being restored');
  gone.add(path.join(etc, 'image-credential-provider-config.yaml'));

  const hashes = await hashNodeFiles(dir);

  expect([...hashes.keys()]).toEqual(['worker-9/etc/kubernetes/kubelet.conf']);
});
