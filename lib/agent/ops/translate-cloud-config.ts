/**
 * `translate-cloud-config`: the external CCM's copy of the in-tree cloud config, written next to the
 * original (see controlplane/openstack-cloud-config.ts for the rules), and what its `use-octavia` says (the
 * orchestrator refuses a config that OCCM could not carry over). The copy is backed up as absent
 * before its first write, so the run's restore removes it and the node's files end as they were. The
 * answer reports the copy's hash and the Secret's name, never a diff: both files can hold credentials.
 */
import { stat } from 'node:fs/promises';
import {
  openstackUsesOctavia,
  translateOpenstackCloudConfig,
} from '../../controlplane/openstack-cloud-config.ts';
import { InvalidInputError } from '../../errors.ts';
import { backUpOnce, onHost, readHostFile, writeAtomically } from '../files.ts';
import type { AgentResult, ParsedAgentRequest } from '../protocol.ts';
import type { AgentEnvironment } from '../run.ts';
import { describeFile, failure } from './report.ts';

type TranslateRequest = Extract<ParsedAgentRequest, { op: 'translate-cloud-config' }>;

export async function translateCloudConfig(
  request: TranslateRequest,
  env: AgentEnvironment,
): Promise<AgentResult> {
  const op = request.op;
  if (request.source === request.target)
    return failure(op, `${request.source}: the copy must not replace it`);
  let translation: ReturnType<typeof translateOpenstackCloudConfig>;
  let useOctavia: boolean | undefined;
  try {
    const text = await readHostFile(env.hostRoot, request.source);
    if (text === undefined) return failure(op, `${request.source}: no such file`);
    translation = translateOpenstackCloudConfig(text);
    useOctavia = openstackUsesOctavia(text);
  } catch (err) {
    if (err instanceof InvalidInputError) return failure(op, `${request.source}: ${err.message}`);
    throw err;
  }
  const read = { op, ok: true, restartKubelet: false, ...(useOctavia === undefined ? {} : { useOctavia }) };
  if (translation === undefined) return { ...read, changed: false, files: [] };
  const current = await readHostFile(env.hostRoot, request.target);
  const changed = current !== translation.text;
  const report = { ...describeFile(request.target, translation.text), changed };
  const answer = { ...read, credentialsSecret: translation.secret };
  if (!changed || request.dryRun) return { ...answer, changed: false, files: [report] };
  const backup = await backUpOnce(env.hostRoot, request.runId, request.target);
  // The copy is as readable as the original the CCM mounted before (it runs as a non-root user).
  const mode = (await stat(onHost(env.hostRoot, request.source))).mode & 0o777;
  await writeAtomically(env.hostRoot, request.target, translation.text, mode);
  return { ...answer, changed: true, files: [{ ...report, backup }] };
}
