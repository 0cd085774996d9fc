/**
 * `restore`: put back the originals this run backed up (every one when no path is named), atomically, with
 * each backup first checked against the digest the run's snapshot recorded (a mismatch writes nothing), and
 * any static pod edits the request adds to them; a file that did not exist before the run is removed. A file already equal to its original is left alone,
 * and a named file the run has no backup of fails the request before anything is written (or, with
 * skipMissing, is left as it is: the run never changed it).
 */
import { isKubeletFlagFile, KUBELET_CONFIG_FILE } from '../../controlplane/kubelet-sources.ts';
import { editStaticPod } from '../../controlplane/static-pod.ts';
import { InvalidInputError } from '../../errors.ts';
import {
  kubeletRestoredMarker,
  listBackups,
  readBackup,
  readHostFile,
  removeHostFile,
  sha256,
  writeAtomically,
} from '../files.ts';
import type { AgentResult, FileReport, ParsedAgentRequest } from '../protocol.ts';
import type { AgentEnvironment } from '../run.ts';
import { changeReport, failure } from './report.ts';

type RestoreRequest = Extract<ParsedAgentRequest, { op: 'restore' }>;

/** The original with the request's edits of that path applied (none: the original's bytes). */
function withEdits(
  path: string,
  original: string | undefined,
  edits: RestoreRequest['staticPods'],
): string | undefined {
  let text = original;
  for (const edit of edits) {
    if (edit.path !== path || text === undefined) continue;
    text = editStaticPod(text, edit).text;
  }
  return text;
}

/** Why a backup is not the original the snapshot recorded, if it is not. */
function backupMismatch(
  expected: RestoreRequest['expected'],
  path: string,
  original: string | undefined,
): string | undefined {
  if (!(path in expected)) return undefined;
  const want = expected[path];
  const got = original === undefined ? null : sha256(Buffer.from(original));
  if (got === want) return undefined;
  const say = (d: string | null | undefined) => (d ? `sha256 ${d.slice(0, 12)}…` : 'no file');
  return `the backup (${say(got)}) is not the original the run recorded (${say(want)}): refusing to restore from it`;
}

export async function restore(request: RestoreRequest, env: AgentEnvironment): Promise<AgentResult> {
  const paths = request.paths.length > 0 ? request.paths : await listBackups(env.hostRoot, request.runId);
  if (!request.dryRun && paths.some(isKubeletFlagFile)) {
    // First, so that a flip of this run that comes later finds it, whether or not one came before.
    await writeAtomically(
      env.hostRoot,
      kubeletRestoredMarker(request.runId),
      `${new Date().toISOString()}\n`,
    );
  }
  const originals: { path: string; original: string | undefined; current: string | undefined }[] = [];
  for (const path of paths) {
    const backup = await readBackup(env.hostRoot, request.runId, path);
    if (backup === undefined) {
      if (request.skipMissing) continue;
      return failure('restore', `${path}: run ${request.runId} has no backup of it`);
    }
    const original = backup === 'absent' ? undefined : backup.text;
    const mismatch = backupMismatch(request.expected, path, original);
    if (mismatch) return failure('restore', `${path}: ${mismatch}`);
    let wanted = original;
    try {
      wanted = withEdits(path, original, request.staticPods);
    } catch (err) {
      if (err instanceof InvalidInputError) return failure('restore', `${path}: ${err.message}`);
      throw err;
    }
    originals.push({ path, original: wanted, current: await readHostFile(env.hostRoot, path) });
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
