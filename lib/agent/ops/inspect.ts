/**
 * `inspect`: hash, size, kind and cloud flags of the asked files and of every kubelet flag source present;
 * with backupsOf, the digests of what that run backed up.
 */
import { parseFlags } from '../../controlplane/flags.ts';
import {
  hostnameOverrideOf,
  KUBELET_FILES,
  kubeletSourceArgs,
  nodeIPAfterRestart,
} from '../../controlplane/kubelet-sources.ts';
import { InvalidInputError } from '../../errors.ts';
import { imageCredentialsOf } from '../credential-plugins.ts';
import { backupDigests, decodeText, readHostBytes } from '../files.ts';
import { CONFIG_DIR_FLAG, kubeletDropIns } from '../kubelet-drop-ins.ts';
import type { AgentResult, ParsedAgentRequest } from '../protocol.ts';
import type { AgentEnvironment } from '../run.ts';
import { describeFile, kubeletFlagsReport } from './report.ts';

export async function inspect(
  request: Extract<ParsedAgentRequest, { op: 'inspect' }>,
  env: AgentEnvironment,
): Promise<AgentResult> {
  // Each file read once: its report, and for the kubelet's sources the text their flags come from.
  const paths = [...new Set([...request.paths, ...KUBELET_FILES])];
  const bytes = new Map(
    await Promise.all(paths.map(async (p) => [p, await readHostBytes(env.hostRoot, p)] as const)),
  );
  const asked = request.paths.map((p) => describeFile(p, bytes.get(p)));
  const kubelet = KUBELET_FILES.filter((p) => !request.paths.includes(p)).map((p) =>
    describeFile(p, bytes.get(p)),
  );
  const texts: Record<string, string | undefined> = {};
  for (const path of KUBELET_FILES) {
    const raw = bytes.get(path);
    texts[path] = raw === undefined ? undefined : decodeText(path, raw);
  }
  const hostnameOverride = hostnameOverrideOf(texts);
  const running = await env.kubeletCommandLine();
  // A config file the agent cannot read leaves the credentials unknown: set-flags refuses that file anyway.
  const credentials = await imageCredentialsOf(env.hostRoot, texts).catch((err: unknown) => {
    if (err instanceof InvalidInputError) return undefined;
    throw err;
  });
  const nodeIP = nodeIPAfterRestart(texts, running?.slice(1));
  const configDir = parseFlags(running?.slice(1) ?? kubeletSourceArgs(texts)).get(CONFIG_DIR_FLAG);
  return {
    op: 'inspect',
    ok: true,
    changed: false,
    restartKubelet: false,
    files: [...asked, ...kubelet.filter((f) => f.exists)],
    host: {
      hostname: await env.hostname(),
      ...(hostnameOverride === undefined ? {} : { hostnameOverride }),
      ...(nodeIP === undefined ? {} : { nodeIP }),
    },
    ...(running ? { kubeletFlags: kubeletFlagsReport(running, texts) } : {}),
    ...(credentials ? { imageCredentials: credentials } : {}),
    ...(configDir ? { kubeletDropIns: await kubeletDropIns(env.hostRoot, configDir) } : {}),
    ...(request.backupsOf ? { backups: await backupDigests(env.hostRoot, request.backupsOf) } : {}),
  };
}
