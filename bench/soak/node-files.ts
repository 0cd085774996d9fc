/** Every node's files as sha256 by `<node>/<absolute path>`: what a way back must give back byte for byte. */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export type FileHashes = ReadonlyMap<string, string>;

export async function hashNodeFiles(stateDir: string): Promise<FileHashes> {
  const root = path.join(stateDir, 'nodes');
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const hashes = await Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e): Promise<[string, string][]> => {
        const full = path.join(e.parentPath, e.name);
        // Gone between the listing and the read (an agent Job still restoring: the judgement reports it as
        // unfinished work): absent, as it now is (seed 1014 threw ENOENT here instead).
        const bytes = await readFile(full).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return undefined;
          throw err;
        });
        return bytes ? [[path.relative(root, full), createHash('sha256').update(bytes).digest('hex')]] : [];
      }),
  );
  return new Map(hashes.flat().sort(([a], [b]) => a.localeCompare(b)));
}
