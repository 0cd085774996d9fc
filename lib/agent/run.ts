/**
 * The node agent's entry point: run one request against a host root. On a real node the root is `/host`
 * (the host filesystem mounted into the Job's pod); in the twin it is the node's directory. Every answer
 * fits the termination message, the one channel back to the orchestrator.
 */
import { withHostLock } from './host-lock.ts';
import { inspect } from './ops/inspect.ts';
import { readFiles } from './ops/read-files.ts';
import { failure } from './ops/report.ts';
import { restartKubelet } from './ops/restart-kubelet.ts';
import { restore } from './ops/restore.ts';
import { setFlags } from './ops/set-flags.ts';
import { translateCloudConfig } from './ops/translate-cloud-config.ts';
import {
  AgentRequestSchema,
  type AgentResult,
  type FileReport,
  type ParsedAgentRequest,
  TERMINATION_MESSAGE_LIMIT,
} from './protocol.ts';

export interface AgentEnvironment {
  /** Where the host's `/` is mounted. */
  readonly hostRoot: string;
  /** The host's own name (its UTS name), which a kubelet without an in-tree provider may register as. */
  readonly hostname: () => Promise<string>;
  /** The running kubelet's command line, program first; undefined when no kubelet process runs. */
  readonly kubeletCommandLine: () => Promise<readonly string[] | undefined>;
}

/** Appended to a diff cut short: a `\` line, which patch tools read as a remark. */
const CUT_MARK = '\\ cut to fit the termination message\n';

function bytes(result: AgentResult): number {
  return Buffer.byteLength(JSON.stringify(result));
}

function cutDiff(diff: string, max: number): string {
  if (diff.length <= max) return diff;
  const end = diff.lastIndexOf('\n', max);
  return `${diff.slice(0, end + 1)}${CUT_MARK}`;
}

function withFiles(result: AgentResult, map: (f: FileReport) => FileReport): AgentResult {
  return { ...result, files: result.files.map(map) };
}

/**
 * The result cut to `limit` bytes of JSON: diffs first (the longest cut to the largest length that fits,
 * each marked), then the reported flags, then the error text, and the file reports only as a last resort.
 */
export function fitResult(result: AgentResult, limit = TERMINATION_MESSAGE_LIMIT): AgentResult {
  if (bytes(result) <= limit) return result;
  const longest = Math.max(0, ...result.files.map((f) => f.diff?.length ?? 0));
  const cut = (max: number): AgentResult =>
    withFiles(result, (f) => (f.diff === undefined ? f : { ...f, diff: cutDiff(f.diff, max) }));
  let lo = 0;
  let hi = longest;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(cut(mid)) <= limit) lo = mid;
    else hi = mid - 1;
  }
  const cutDiffs = cut(lo);
  if (bytes(cutDiffs) <= limit) return cutDiffs;
  const noDiffs = withFiles(cutDiffs, ({ diff: _, ...f }) => f);
  if (bytes(noDiffs) <= limit) return noDiffs;
  const noFlags = withFiles(noDiffs, ({ flags: _, ...f }) => f);
  if (bytes(noFlags) <= limit) return noFlags;
  const withError = (r: AgentResult): AgentResult => {
    const spare = limit - bytes({ ...r, error: '' });
    return { ...r, error: cutToBytes(r.error ?? '', spare) };
  };
  const errorCut = withError(noFlags);
  return bytes(errorCut) <= limit ? errorCut : withError({ ...noFlags, files: [] });
}

/** The longest start of `text` whose JSON string takes at most `max` bytes between its quotes. */
function cutToBytes(text: string, max: number): string {
  let end = Math.min(text.length, Math.max(0, max));
  while (end > 0 && Buffer.byteLength(JSON.stringify(text.slice(0, end))) - 2 > max) end--;
  return text.slice(0, end);
}

/** The operations that change a node's files, one at a time per node (host-lock.ts). */
function changesFiles(request: ParsedAgentRequest): boolean {
  const changing =
    request.op === 'set-flags' || request.op === 'restore' || request.op === 'translate-cloud-config';
  return changing && !request.dryRun;
}

async function dispatch(input: unknown, env: AgentEnvironment): Promise<AgentResult> {
  const parsed = AgentRequestSchema.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return failure('unknown', `invalid agent request: ${issues.join('; ')}`);
  }
  const request = parsed.data;
  const run = async (): Promise<AgentResult> => {
    switch (request.op) {
      case 'inspect':
        return inspect(request, env);
      case 'set-flags':
        return setFlags(request, env);
      case 'restart-kubelet':
        return restartKubelet();
      case 'restore':
        return restore(request, env);
      case 'translate-cloud-config':
        return translateCloudConfig(request, env);
      case 'read-files':
        return readFiles(request, env);
    }
  };
  try {
    return changesFiles(request) ? await withHostLock(env.hostRoot, run) : await run();
  } catch (err) {
    return failure(request.op, (err as Error).message);
  }
}

/** Run one request; any failure is answered with `ok: false`, never a throw. */
export async function runAgent(input: unknown, env: AgentEnvironment): Promise<AgentResult> {
  return fitResult(await dispatch(input, env));
}
