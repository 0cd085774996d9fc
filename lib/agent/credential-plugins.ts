/**
 * The kubelet's image credentials on this host: its effective credential flags and where the cloud
 * credential plugins are installed (lib/providers/image-credentials.ts says what each means).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { effectiveKubeletFlags, type KubeletFiles } from '../controlplane/kubelet-sources.ts';
import {
  ACR_CONFIG_FLAG,
  PLUGIN_BIN_DIR_FLAG,
  PLUGIN_CONFIG_FLAG,
  PLUGIN_DIRS,
  PLUGIN_NAMES,
} from '../providers/image-credentials.ts';
import { onHost } from './files.ts';

const CREDENTIAL_FLAGS = ['feature-gates', ACR_CONFIG_FLAG, PLUGIN_CONFIG_FLAG, PLUGIN_BIN_DIR_FLAG];

async function isFile(hostRoot: string, file: string): Promise<boolean> {
  return stat(onHost(hostRoot, file)).then(
    (s) => s.isFile(),
    () => false,
  );
}

/** The first of PLUGIN_DIRS that holds the plugin `name`, if any. */
export async function pluginDir(hostRoot: string, name: string): Promise<string | undefined> {
  for (const dir of PLUGIN_DIRS) if (await isFile(hostRoot, path.posix.join(dir, name))) return dir;
  return undefined;
}

/** The kubelet's credential flags (from its files) and the directory of each plugin found. */
export async function imageCredentialsOf(
  hostRoot: string,
  files: KubeletFiles,
): Promise<{ flags: Record<string, string>; plugins: Record<string, string> }> {
  const effective = effectiveKubeletFlags(files);
  const flags = Object.fromEntries(
    CREDENTIAL_FLAGS.flatMap((f) => (effective.has(f) ? [[f, effective.get(f) as string]] : [])),
  );
  const plugins: Record<string, string> = {};
  for (const name of PLUGIN_NAMES) {
    const dir = await pluginDir(hostRoot, name);
    if (dir) plugins[name] = dir;
  }
  return { flags, plugins };
}
