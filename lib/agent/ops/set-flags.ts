/**
 * `set-flags`: change flags in static pod manifests and the kubelet's flag sources. Every edit is computed
 * before anything is written, so a file the agent cannot read stops the request with nothing changed.
 * Each file changed is backed up once per run, then replaced atomically.
 */

import {
  editKubeletSources,
  effectiveKubeletFlags,
  externalNodeName,
  hostnameOverrideOf,
  KUBELET_FILES,
  type KubeletChanges,
} from '../../controlplane/kubelet-sources.ts';
import { editStaticPod } from '../../controlplane/static-pod.ts';
import { InvalidInputError } from '../../errors.ts';
import type { ProviderId } from '../../providers/catalog.ts';
import {
  credentialPluginOf,
  credentialProviderConfig,
  inTreeCredentials,
  PLUGIN_BIN_DIR_FLAG,
  PLUGIN_CONFIG_FLAG,
  PLUGIN_CONFIG_PATH,
  PLUGIN_DIRS,
} from '../../providers/image-credentials.ts';
import { pluginDir } from '../credential-plugins.ts';
import { backUpOnce, kubeletRestoredMarker, readHostFile, writeAtomically } from '../files.ts';
import type { AgentResult, FileReport, ParsedAgentRequest } from '../protocol.ts';
import type { AgentEnvironment } from '../run.ts';
import { changeReport, failure, kubeletFlagsReport } from './report.ts';

type SetFlagsRequest = Extract<ParsedAgentRequest, { op: 'set-flags' }>;

interface PlannedFile {
  readonly path: string;
  readonly before: string | undefined;
  readonly after: string | undefined;
  readonly kubelet: boolean;
}

/** The files as they would be after the request, in request order; throws InvalidInputError naming a file. */
async function plan(request: SetFlagsRequest, env: AgentEnvironment): Promise<PlannedFile[]> {
  const { hostRoot } = env;
  const pods = new Map<string, { before: string; after: string }>();
  for (const edit of request.staticPods) {
    const current = pods.get(edit.path);
    const text = current?.after ?? (await readHostFile(hostRoot, edit.path));
    if (text === undefined) throw new InvalidInputError(`${edit.path}: no such file`);
    let after: string;
    try {
      after = editStaticPod(text, edit).text;
    } catch (err) {
      if (err instanceof InvalidInputError) throw new InvalidInputError(`${edit.path}: ${err.message}`);
      throw err;
    }
    pods.set(edit.path, { before: current?.before ?? text, after });
  }
  const planned: PlannedFile[] = [...pods].map(([path, p]) => ({ path, ...p, kubelet: false }));
  if (request.kubelet) {
    const files: Record<string, string | undefined> = {};
    for (const path of KUBELET_FILES) files[path] = await readHostFile(hostRoot, path);
    const changes = await pinnedName(request.kubelet, files, env);
    const credentials = await credentialChanges(request.kubelet, files, changes, env);
    if (credentials) {
      // The config first: a kubelet pointed at it must find it, whatever stops the request after.
      const before = await readHostFile(hostRoot, PLUGIN_CONFIG_PATH);
      planned.push({ path: PLUGIN_CONFIG_PATH, before, after: credentials.config, kubelet: false });
    }
    const edits = editKubeletSources(
      files,
      credentials ? { ...changes, flags: { ...changes.flags, ...credentials.flags } } : changes,
    );
    for (const path of KUBELET_FILES) {
      const after = edits[path]?.text;
      if (files[path] !== undefined || after !== undefined) {
        planned.push({ path, before: files[path], after, kubelet: true });
      }
    }
  }
  return planned;
}

/**
 * The kubelet changes, with --hostname-override set to the Node's name where the kubelet would otherwise
 * register as another (its host's name, or an override an in-tree provider ignored).
 */
async function pinnedName(
  change: NonNullable<SetFlagsRequest['kubelet']>,
  files: Record<string, string | undefined>,
  env: AgentEnvironment,
): Promise<KubeletChanges> {
  const { keepNodeName, ...changes } = change;
  if (keepNodeName === undefined) return changes;
  if (externalNodeName(await env.hostname(), hostnameOverrideOf(files)) === keepNodeName) return changes;
  return { ...changes, flags: { ...changes.flags, 'hostname-override': keepNodeName } };
}

/**
 * The kubelet's credential plugin in place of its in-tree credential provider: the flags and the config to
 * write, or undefined when there is nothing to take over (no in-tree credentials in use, or a plugin config
 * the kubelet already has, ours from an earlier attempt or the operator's own). Throws InvalidInputError
 * when the plugin is required and not installed.
 */
async function credentialChanges(
  change: NonNullable<SetFlagsRequest['kubelet']>,
  files: Record<string, string | undefined>,
  changes: KubeletChanges,
  env: AgentEnvironment,
): Promise<{ flags: Record<string, string | null>; config: string } | undefined> {
  const wanted = change.imageCredentials;
  const provider = wanted?.provider as ProviderId;
  const plugin = wanted && credentialPluginOf(provider);
  if (!wanted || !plugin) return undefined;
  const flags = effectiveKubeletFlags(files);
  if (flags.has(PLUGIN_CONFIG_FLAG) || !inTreeCredentials(provider, wanted.minor, flags)) return undefined;
  const dir = await pluginDir(env.hostRoot, plugin.name);
  if (!dir) {
    const edited = editKubeletSources(files, changes);
    const after = effectiveKubeletFlags(Object.fromEntries(KUBELET_FILES.map((p) => [p, edited[p]?.text])));
    // Without the plugin the change goes ahead where the cluster needs no credentials, or keeps in-tree ones.
    if (!wanted.required || inTreeCredentials(provider, wanted.minor, after)) return undefined;
    throw new InvalidInputError(
      `the kubelet pulls from ${plugin.registry} with its in-tree credentials, and ${plugin.name} is in none of ${PLUGIN_DIRS.join(', ')}`,
    );
  }
  const argFile = plugin.argFromFlag ? flags.get(plugin.argFromFlag) : undefined;
  return {
    flags: {
      [PLUGIN_CONFIG_FLAG]: PLUGIN_CONFIG_PATH,
      [PLUGIN_BIN_DIR_FLAG]: dir,
      ...(plugin.argFromFlag ? { [plugin.argFromFlag]: null } : {}),
    },
    config: credentialProviderConfig(plugin, wanted.minor, argFile),
  };
}

export async function setFlags(request: SetFlagsRequest, env: AgentEnvironment): Promise<AgentResult> {
  const flip = request.kubelet?.flags['cloud-provider'] === 'external';
  if (flip && (await readHostFile(env.hostRoot, kubeletRestoredMarker(request.runId))) !== undefined) {
    // The way back of this run has begun here: a flip that arrives late (the soak's seed 1014: a flip
    // Job still queued when its batch failed) would leave the kubelet external after RolledBack.
    return failure(
      'set-flags',
      `run ${request.runId} restored this node's kubelet flags: not flipping it again`,
    );
  }
  let planned: PlannedFile[];
  try {
    planned = await plan(request, env);
  } catch (err) {
    if (err instanceof InvalidInputError) return failure('set-flags', err.message);
    throw err;
  }
  const reports: FileReport[] = [];
  let changed = false;
  let kubeletChanged = false;
  for (const file of planned) {
    const differs = file.before !== file.after;
    if (!differs || request.dryRun || file.after === undefined) {
      reports.push(changeReport(file.path, file.before, file.after));
      continue;
    }
    try {
      const backup = await backUpOnce(env.hostRoot, request.runId, file.path);
      await writeAtomically(env.hostRoot, file.path, file.after);
      reports.push(changeReport(file.path, file.before, file.after, backup));
    } catch (err) {
      // Files written so far stay changed (and backed up): the answer says so, and restore undoes them.
      const result = failure('set-flags', `${file.path}: ${(err as Error).message}`, reports, changed);
      return { ...result, restartKubelet: kubeletChanged };
    }
    changed = true;
    kubeletChanged ||= file.kubelet;
  }
  return {
    op: 'set-flags',
    ok: true,
    changed,
    restartKubelet: kubeletChanged,
    files: reports,
    ...(request.kubelet && !request.dryRun ? await kubeletAfter(planned, env) : {}),
  };
}

/**
 * The running kubelet against the flag files as the request left them (issue 15, item 6): one that runs
 * other flags needs a restart. Where this request restarts it, the agent's entry point puts the restarted
 * kubelet's flags in place of the running ones (lib/agent/main.ts), so the orchestrator needs no second
 * pod to check the flip.
 */
async function kubeletAfter(
  planned: readonly PlannedFile[],
  env: AgentEnvironment,
): Promise<Pick<AgentResult, 'kubeletFlags'>> {
  const texts = Object.fromEntries(
    planned.filter((f) => f.kubelet).map((f) => [f.path, f.after ?? f.before] as const),
  );
  const kubeletFlags = kubeletFlagsReport(await env.kubeletCommandLine(), texts);
  return kubeletFlags ? { kubeletFlags } : {};
}
