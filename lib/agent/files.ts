/**
 * How the agent touches a host's files: every path is resolved under the host root, the first change of a
 * run backs the original up under BACKUP_DIR/<run-id>/ (so `restore` can put it back), and writes are
 * atomic (a temp file in the same directory, fsync, rename, fsync of the directory): a node that loses power mid-write keeps
 * either the old file or the new one, never half of each, which matters for static pod manifests that the
 * kubelet reads at any moment.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '../errors.ts';

/** Where originals are kept, per run, on the host (outside the static pod directory, which runs any file). */
export const BACKUP_DIR = '/etc/kubernetes/ccm-migrate-backup';
/** Next to a backup's place: the file did not exist before the run (restoring it removes the file). */
const ABSENT_SUFFIX = '.ccm-migrate-absent';

/** A host path inside the host root; refuses paths that would leave it. */
export function onHost(hostRoot: string, file: string): string {
  const resolved = path.resolve(hostRoot, `.${path.posix.resolve('/', file)}`);
  if (resolved !== hostRoot && !resolved.startsWith(`${hostRoot}${path.sep}`)) {
    throw new Error(`${file} is outside the host root`);
  }
  return resolved;
}

/**
 * Written when a run's kubelet flags are restored on a node (a rollback or a downgrade has begun there),
 * beside the run's backups rather than among them: a flip of the same run that reaches the node later (an
 * invocation still in flight when the run failed, its Job queued) must not undo the way back.
 */
export function kubeletRestoredMarker(runId: string): string {
  return path.posix.join(BACKUP_DIR, '.kubelet-restored', runId);
}

export function backupPath(runId: string, file: string): string {
  return path.posix.join(BACKUP_DIR, runId, file);
}

/** The file's bytes, or undefined when it does not exist. */
export async function readHostBytes(hostRoot: string, file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(onHost(hostRoot, file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Text as UTF-8; refuses bytes that are not (rewriting them would not keep them byte for byte). */
export function decodeText(file: string, bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new InvalidInputError(`${file}: not UTF-8 text`);
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readHostFile(hostRoot: string, file: string): Promise<string | undefined> {
  const bytes = await readHostBytes(hostRoot, file);
  return bytes === undefined ? undefined : decodeText(file, bytes);
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/**
 * Keep the original of `file` for this run, once: a second change in the same run keeps the first backup.
 * A file that does not exist yet is recorded as absent. The copy is made under a temp name and renamed, so
 * an agent killed mid-copy never leaves a half backup that a later attempt would take for the original.
 */
export async function backUpOnce(hostRoot: string, runId: string, file: string): Promise<string> {
  const backup = backupPath(runId, file);
  const target = onHost(hostRoot, backup);
  const marker = `${target}${ABSENT_SUFFIX}`;
  if ((await exists(target)) || (await exists(marker))) return backup;
  await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString('hex')}`);
  try {
    await copyFile(onHost(hostRoot, file), temp);
    await syncFile(temp);
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true });
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await writeFile(marker, '');
    await syncFile(marker);
  }
  // The rename (or the marker) is durable only once the directory is: a backup must outlive a power cut
  // that the change after it survives.
  await syncFile(path.dirname(target));
  return backup;
}

/** fsync a file or a directory (a directory's entries: a rename or a new file in it). */
async function syncFile(p: string): Promise<void> {
  const handle = await open(p, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** sha256 of bytes, hex: how a snapshot records a file. */
export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Per path the run backed up: the sha256 of the original, null when it did not exist. */
export async function backupDigests(hostRoot: string, runId: string): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const file of await listBackups(hostRoot, runId)) {
    const bytes = await readHostBytes(hostRoot, backupPath(runId, file));
    out[file] = bytes === undefined ? null : sha256(bytes);
  }
  return out;
}

/** What the run kept of `file`: its original text, `absent` when it did not exist, undefined when nothing. */
export async function readBackup(
  hostRoot: string,
  runId: string,
  file: string,
): Promise<{ readonly text: string } | 'absent' | undefined> {
  const backup = backupPath(runId, file);
  const bytes = await readHostBytes(hostRoot, backup);
  if (bytes !== undefined) return { text: decodeText(backup, bytes) };
  return (await exists(onHost(hostRoot, `${backup}${ABSENT_SUFFIX}`))) ? 'absent' : undefined;
}

/** The host paths of every file the run backed up, sorted. */
export async function listBackups(hostRoot: string, runId: string): Promise<string[]> {
  const root = onHost(hostRoot, path.posix.join(BACKUP_DIR, runId));
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  });
  return entries
    .filter((e) => e.isFile() && !e.name.startsWith('.'))
    .map((e) => `/${path.relative(root, path.join(e.parentPath, e.name)).split(path.sep).join('/')}`)
    .map((p) => (p.endsWith(ABSENT_SUFFIX) ? p.slice(0, -ABSENT_SUFFIX.length) : p))
    .sort();
}

export async function removeHostFile(hostRoot: string, file: string): Promise<void> {
  await rm(onHost(hostRoot, file), { force: true });
}

/**
 * Replace a file atomically, keeping its mode (`newFileMode` for a new file, whose directory is created). The temp
 * file has a hidden name: the kubelet's static pod source skips dot files, so it never runs a half-written
 * manifest.
 */
export async function writeAtomically(
  hostRoot: string,
  file: string,
  text: string,
  newFileMode = 0o600,
): Promise<void> {
  const target = onHost(hostRoot, file);
  const mode = await stat(target).then(
    (s) => s.mode & 0o777,
    () => newFileMode,
  );
  await mkdir(path.dirname(target), { recursive: true });
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString('hex')}`);
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncFile(path.dirname(target));
}
