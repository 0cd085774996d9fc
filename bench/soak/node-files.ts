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
      .map(async (e): Promise<[string, string]> => {
        const full = path.join(e.parentPath, e.name);
        const sha = createHash('sha256')
          .update(await readFile(full))
          .digest('hex');
        return [path.relative(root, full), sha];
      }),
  );
  return new Map(hashes.sort(([a], [b]) => a.localeCompare(b)));
}
