/**
 * The KubeletConfiguration drop-ins of the kubelet's --config-dir (1.28+, KEP-3983): `*.conf` files the
 * kubelet merges over its --config file, in file-name order, subdirectories included
 * (cmd/kubelet/app/server.go, mergeKubeletConfigurations walks it with filepath.WalkDir). ccm-migrate does
 * not edit them, so the gates they set outlast the flip; inspect reports each file's featureGates.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { kubeletConfigGates } from '../controlplane/kubelet-sources.ts';
import { InvalidInputError } from '../errors.ts';
import { onHost, readHostFile } from './files.ts';
import type { AgentResult } from './protocol.ts';

export const CONFIG_DIR_FLAG = 'config-dir';

type DropIn = NonNullable<AgentResult['kubeletDropIns']>[number];

/** The `*.conf` files under `dir` in WalkDir's order ([] when the directory is not there). */
export async function confFiles(hostRoot: string, dir: string): Promise<string[]> {
  const entries = await readdir(onHost(hostRoot, dir), { withFileTypes: true }).catch(
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
      throw err;
    },
  );
  const sorted = entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: string[] = [];
  for (const entry of sorted) {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await confFiles(hostRoot, file)));
    else if (entry.name.endsWith('.conf')) files.push(file);
  }
  return files;
}

/** Each drop-in of `dir` with the feature gates it sets, or why the agent cannot read it. */
export async function kubeletDropIns(hostRoot: string, dir: string): Promise<DropIn[]> {
  const out: DropIn[] = [];
  for (const file of await confFiles(hostRoot, dir)) {
    try {
      const gates = kubeletConfigGates((await readHostFile(hostRoot, file)) ?? '');
      out.push({ path: file, ...(gates === undefined ? {} : { featureGates: gates }) });
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
      out.push({ path: file, error: err.message });
    }
  }
  return out;
}
