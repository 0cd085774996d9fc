/**
 * What the agent Job's container runs (`node --input-type=module -e <LAUNCHER>`): it lives in the Job's own
 * spec, not in the ConfigMap it checks, so an edited ConfigMap cannot change the check too. Before the agent
 * touches anything it makes sure that
 * - the image has `nsenter` on PATH: the agent restarts the kubelet through it, and an image without it
 *   would fail after the node's files had changed, not before;
 * - the bundle (AGENT_BUNDLE_ENV, from the ConfigMap) has the sha256 the Job names (AGENT_SHA256_ENV,
 *   computed when the bundle was applied): a ConfigMap edited since, or replaced by another version of
 *   ccm-migrate, is not run.
 * A refusal is an answer (`refused`, see AgentRefusalSchema) in the termination log, exit code 1.
 * It runs the bytes it hashed, from a copy in the container: a ConfigMap volume can change under a running
 * pod (the kubelet swaps its `..data` link), so reading the mounted file twice could run something else.
 */
import {
  AGENT_BUNDLE_ENV,
  AGENT_REQUEST_ENV,
  AGENT_SHA256_ENV,
  type AgentRefusal,
  TERMINATION_LOG_ENV,
} from './protocol.ts';

const js = JSON.stringify;
const NO_NSENTER: AgentRefusal = 'no-nsenter';
const BUNDLE_SHA256: AgentRefusal = 'bundle-sha256';

export const LAUNCHER = `
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
const env = process.env;
function refuse(refused, error) {
  let op = 'unknown';
  try { op = JSON.parse(env[${js(AGENT_REQUEST_ENV)}]).op ?? op; } catch {}
  const answer = { op, ok: false, changed: false, refused, error };
  writeFileSync(env[${js(TERMINATION_LOG_ENV)}] ?? '/dev/termination-log', JSON.stringify(answer));
  process.exit(1);
}
function executable(file) {
  try { accessSync(file, constants.X_OK); return true; } catch { return false; }
}
const path = (env.PATH ?? '').split(delimiter).filter(Boolean);
if (!path.some((dir) => executable(join(dir, 'nsenter'))))
  refuse(${js(NO_NSENTER)}, 'no nsenter on PATH (' + path.join(delimiter) + ')');
const file = env[${js(AGENT_BUNDLE_ENV)}] ?? '';
const expected = env[${js(AGENT_SHA256_ENV)}] ?? '';
let bundle;
try { bundle = readFileSync(file); } catch (err) { refuse(${js(BUNDLE_SHA256)}, 'cannot read ' + file + ': ' + err.code); }
const actual = createHash('sha256').update(bundle).digest('hex');
if (actual !== expected)
  refuse(${js(BUNDLE_SHA256)}, 'the bundle ' + file + ' has sha256 ' + actual + ', the Job expects ' + (expected || 'none'));
const copy = join(mkdtempSync(join(tmpdir(), 'ccm-migrate-agent-')), 'agent.mjs');
writeFileSync(copy, bundle, { mode: 0o400 });
const { agentMain } = await import(pathToFileURL(copy).href);
process.exitCode = await agentMain();
`;

/** The container's command: Node runs the launcher from the Job spec. */
export const LAUNCHER_COMMAND: readonly string[] = ['node', '--input-type=module', '-e', LAUNCHER];
