/**
 * `restore`: put back the originals this run backed up (every one when no path is named), atomically; a
 * file that did not exist before the run is removed. A file already equal to its original is left alone,
 * and a named file the run has no backup of fails the request before anything is written (or, with
 * skipMissing, is left as it is: the run never changed it).
 */
import { isKubeletFlagFile, KUBELET_CONFIG_FILE } from '../../controlplane/kubelet-sources.ts';
import { listBackups, readBackup, readHostFile, removeHostFile, writeAtomically } from '../files.ts';
import type { AgentResult, FileReport, ParsedAgentRequest } from '../protocol.ts';
import type { AgentEnvironment } from '../run.ts';
import { changeReport, failure } from './report.ts';

type RestoreRequest = Extract<ParsedAgentRequest, { op: 'restore' }>;

export async function restore(request: RestoreRequest, env: AgentEnvironment): Promise<AgentResult> {
  const paths = request.paths.length > 0 ? request.paths : await listBackups(env.hostRoot, request.runId);
  const originals: { path: string; original: string | undefined; current: string | undefined }[] = [];
  for (const path of paths) {
    const backup = await readBackup(env.hostRoot, request.runId, path);
    if (backup === undefined) {
      if (request.skipMissing) continue;
      return failure('restore', `${path}: run ${request.runId} has no backup of it`);
    }
    const original = backup === 'absent' ? undefined : backup.text;
    originals.push({ path, original, current: await readHostFile(env.hostRoot, path) });
  }
  const reports: FileReport[] = [];
  let changed = false;
  let kubeletChanged = false;
  for (const { path, original, current } of originals) {
    if (current !== original && !request.dryRun) {
      try {
        if (original === undefined) await removeHostFile(env.hostRoot, path);
        else await writeAtomically(env.hostRoot, path, original);
      } catch (err) {
        const result = failure('restore', `${path}: ${(err as Error).message}`, reports, changed);
        return { ...result, restartKubelet: kubeletChanged };
      }
      changed = true;
      kubeletChanged ||= isKubeletFlagFile(path) || path === KUBELET_CONFIG_FILE;
    }
    reports.push(changeReport(path, current, original));
  }
  return { op: 'restore', ok: true, changed, restartKubelet: kubeletChanged, files: reports };
}
