/**
 * The node agent's entry point: run one request against a host root. On a real node the root is `/host`
 * (the host filesystem mounted into the Job's pod); in the twin it is the node's directory.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type AgentRequest, AgentRequestSchema, type AgentResult, type FileReport } from './protocol.ts';

export interface AgentEnvironment {
  /** Where the host's `/` is mounted. */
  readonly hostRoot: string;
}

async function report(hostRoot: string, file: string): Promise<FileReport> {
  try {
    const bytes = await readFile(path.join(hostRoot, file));
    return {
      path: file,
      exists: true,
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { path: file, exists: false };
    throw err;
  }
}

async function inspect(
  request: Extract<AgentRequest, { op: 'inspect' }>,
  env: AgentEnvironment,
): Promise<AgentResult> {
  const files = await Promise.all(request.paths.map((p) => report(env.hostRoot, p)));
  return { op: 'inspect', ok: true, changed: false, restartKubelet: false, files };
}

/** Run one request; a request that does not parse is answered with `ok: false`, never a throw. */
export async function runAgent(input: unknown, env: AgentEnvironment): Promise<AgentResult> {
  const parsed = AgentRequestSchema.safeParse(input);
  if (!parsed.success) {
    return {
      op: 'unknown',
      ok: false,
      changed: false,
      restartKubelet: false,
      files: [],
      error: `invalid agent request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    };
  }
  return inspect(parsed.data, env);
}
