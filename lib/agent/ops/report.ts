/**
 * What the agent says about a file: its hash and size, how it read it, its cloud flags, and for a change a
 * short unified diff. Shared by the operations; never the file's text itself.
 */
import { createHash } from 'node:crypto';
import { createPatch } from 'diff';
import {
  checkedKubeletFlags,
  isKubeletFlagFile,
  KUBELET_CONFIG_FILE,
  type KubeletFiles,
  kubeletConfigGates,
  kubeletFileArgs,
  kubeletSourceArgs,
} from '../../controlplane/kubelet-sources.ts';
import { cloudFlagsOf, cloudFlagsOfArgs } from '../../controlplane/static-pod.ts';
import { decodeText } from '../files.ts';
import type { AgentResult, FileReport } from '../protocol.ts';

/** Lines of context around a change: enough to place it, little enough to keep answers small. */
const DIFF_CONTEXT = 1;

function kindAndFlags(path: string, bytes: Buffer): Pick<FileReport, 'kind' | 'flags'> {
  try {
    const text = decodeText(path, bytes);
    if (isKubeletFlagFile(path)) {
      return { kind: 'kubelet-env', flags: cloudFlagsOfArgs(kubeletFileArgs(path, text)) };
    }
    if (path === KUBELET_CONFIG_FILE) {
      const gates = kubeletConfigGates(text);
      return { kind: 'kubelet-config', flags: gates === undefined ? {} : { 'feature-gates': gates } };
    }
    return { kind: 'static-pod', flags: cloudFlagsOf(text) };
  } catch {
    // Not a manifest (a cloud config, a certificate …) or not one the agent can read: hash and size only.
    return { kind: 'other' };
  }
}

/** A file as it is (or would be) now: undefined for a file that does not exist. */
export function describeFile(path: string, content: string | Buffer | undefined): FileReport {
  if (content === undefined) return { path, exists: false };
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  return {
    path,
    exists: true,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    ...kindAndFlags(path, bytes),
  };
}

/** The unified diff of a change, without the `Index:` banner; a missing file counts as empty. */
function unifiedDiff(path: string, before: string | undefined, after: string | undefined): string {
  const patch = createPatch(path, before ?? '', after ?? '', '', '', { context: DIFF_CONTEXT });
  return patch.slice(patch.indexOf('--- '));
}

/**
 * A file that changed (or, on a dry run, would). Only a file the agent reads as a manifest or kubelet flags
 * gets a diff: any other (a cloud config the run copied, and restore removes) can hold credentials.
 */
export function changeReport(
  path: string,
  before: string | undefined,
  after: string | undefined,
  backup?: string,
): FileReport {
  const changed = before !== after;
  const diffable = describeFile(path, after ?? before).kind !== 'other';
  return {
    ...describeFile(path, after),
    changed,
    ...(changed && backup ? { backup } : {}),
    ...(changed && diffable ? { diff: unifiedDiff(path, before, after) } : {}),
  };
}

export function failure(op: string, error: string, files: FileReport[] = [], changed = false): AgentResult {
  return { op, ok: false, changed, restartKubelet: false, files, error };
}

/**
 * The kubelet flags ccm-migrate changes, on the running kubelet's command line (program first) and in the
 * flag files `texts`; undefined when no kubelet process runs.
 */
export function kubeletFlagsReport(
  running: readonly string[] | undefined,
  texts: KubeletFiles,
): AgentResult['kubeletFlags'] {
  if (!running) return undefined;
  return {
    running: checkedKubeletFlags(running.slice(1)),
    files: checkedKubeletFlags(kubeletSourceArgs(texts)),
  };
}

/** The report with the running side replaced: what a restarted kubelet (program first) runs. */
export function withRestartedKubelet(result: AgentResult, argv: readonly string[]): AgentResult {
  if (!result.kubeletFlags) return result;
  return { ...result, kubeletFlags: { ...result.kubeletFlags, running: checkedKubeletFlags(argv.slice(1)) } };
}
