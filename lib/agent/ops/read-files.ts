/**
 * `read-files`: the files a twin of this node needs, templated with the node's own name and address (see
 * ReadFilesRequestSchema). Which files is decided here, on the node, from a fixed list of known non-secret
 * places: a request names a file only to read the next chunk of one this list holds, so the operation
 * cannot be turned into reading any other file.
 */
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { parseFlags } from '../../controlplane/flags.ts';
import {
  effectiveKubeletFlags,
  KUBELET_FILES,
  type KubeletFiles,
  kubeletSourceArgs,
  SYSTEMD_UNIT_DIRS,
} from '../../controlplane/kubelet-sources.ts';
import { cloudFlagsOf } from '../../controlplane/static-pod.ts';
import { InvalidInputError } from '../../errors.ts';
import { ACR_CONFIG_FLAG, PLUGIN_CONFIG_FLAG } from '../../providers/image-credentials.ts';
import { renderHostFile, STATIC_POD_DIR } from '../../twin/spec.ts';
import { imageCredentialsOf } from '../credential-plugins.ts';
import { onHost, readHostFile } from '../files.ts';
import { CONFIG_DIR_FLAG, confFiles } from '../kubelet-drop-ins.ts';
import { type AgentResult, type ParsedAgentRequest, TERMINATION_MESSAGE_LIMIT } from '../protocol.ts';
import type { AgentEnvironment } from '../run.ts';

type Request = Extract<ParsedAgentRequest, { op: 'read-files' }>;
type Withheld = NonNullable<AgentResult['withheld']>[number];

/** Never read, whatever names them: the cluster's certificates and keys. */
const PKI_DIR = '/etc/kubernetes/pki';

/** Regular files directly in `dir`, hidden ones aside (the kubelet's file source skips them). */
async function filesIn(hostRoot: string, dir: string, suffix = ''): Promise<string[]> {
  const entries = await readdir(onHost(hostRoot, dir), { withFileTypes: true }).catch(
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
      throw err;
    },
  );
  return entries
    .filter((e) => e.isFile() && !e.name.startsWith('.') && e.name.endsWith(suffix))
    .map((e) => path.posix.join(dir, e.name))
    .sort();
}

/** The kubelet's systemd unit and its drop-ins, in every directory systemd reads them from. */
async function kubeletUnitFiles(hostRoot: string): Promise<string[]> {
  const found: string[] = [];
  for (const dir of SYSTEMD_UNIT_DIRS) {
    if ((await readHostFile(hostRoot, `${dir}/kubelet.service`)) !== undefined)
      found.push(`${dir}/kubelet.service`);
    found.push(...(await filesIn(hostRoot, `${dir}/kubelet.service.d`, '.conf')));
  }
  return found;
}

interface NodeFiles {
  /** Read and templated, by path. */
  readonly texts: ReadonlyMap<string, string>;
  readonly withheld: readonly Withheld[];
}

/** The cloud configs the static pods and the kubelet name, and the credential plugins installed. */
async function withheldFiles(
  hostRoot: string,
  pods: ReadonlyMap<string, string>,
  kubelet: KubeletFiles,
): Promise<Withheld[]> {
  const flags = effectiveKubeletFlags(kubelet);
  const configs = [flags.get('cloud-config'), flags.get(ACR_CONFIG_FLAG)];
  for (const text of pods.values()) {
    try {
      configs.push(cloudFlagsOf(text)['cloud-config']);
    } catch {
      // Not a manifest the agent parses: it names no cloud config it could find.
    }
  }
  const { plugins } = await imageCredentialsOf(hostRoot, kubelet);
  const withheld: Withheld[] = [...new Set(configs)]
    .filter((p): p is string => p?.startsWith('/') === true)
    .map((p) => ({ path: p, kind: 'cloud-config' }));
  for (const [name, dir] of Object.entries(plugins)) {
    withheld.push({ path: path.posix.join(dir, name), kind: 'credential-plugin' });
  }
  return withheld;
}

function isUnder(dir: string, file: string): boolean {
  return file === dir || file.startsWith(`${dir}/`);
}

/** The node's file, with its own name and address written as the twin spec's placeholders. */
function templated(file: string, text: string, template: Request['template']): string {
  const out = text.replaceAll(template.nodeName, '{{nodeName}}').replaceAll(template.nodeIP, '{{nodeIP}}');
  // A file that holds a placeholder's own text (or names its node inside its address) would not come back
  // as it is when the twin writes it: refuse it rather than give the twin another file.
  if (renderHostFile(out, { ...template, index: 0 }) !== text) {
    throw new InvalidInputError(`${file}: its text cannot be written as a twin host file`);
  }
  return out;
}

async function nodeFiles(hostRoot: string, template: Request['template']): Promise<NodeFiles> {
  const read = async (paths: readonly string[]): Promise<Map<string, string>> => {
    const texts = new Map<string, string>();
    for (const p of paths) {
      const text = await readHostFile(hostRoot, p);
      if (text !== undefined) texts.set(p, text);
    }
    return texts;
  };
  const pods = await read(await filesIn(hostRoot, STATIC_POD_DIR));
  const kubelet = Object.fromEntries(await read(KUBELET_FILES));
  const flags = effectiveKubeletFlags(kubelet);
  const configDir = parseFlags(kubeletSourceArgs(kubelet)).get(CONFIG_DIR_FLAG);
  const more = [
    ...(await kubeletUnitFiles(hostRoot)),
    ...(configDir ? await confFiles(hostRoot, configDir) : []),
    ...[flags.get(PLUGIN_CONFIG_FLAG)].filter((p): p is string => p?.startsWith('/') === true),
  ];
  const withheld = await withheldFiles(hostRoot, pods, kubelet);
  const secret = (p: string): boolean => isUnder(PKI_DIR, p) || withheld.some((w) => w.path === p);
  const all = new Map([...pods, ...Object.entries(kubelet), ...(await read(more))]);
  const texts = new Map(
    [...all].filter(([p]) => !secret(p)).map(([p, text]) => [p, templated(p, text, template)] as const),
  );
  return { texts, withheld };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function bytes(result: AgentResult): number {
  return Buffer.byteLength(JSON.stringify(result));
}

/** As much of `text` from `offset` as keeps the answer inside the termination message (at least one character). */
function chunkOf(file: string, text: string, offset: number): AgentResult {
  const answer = (end: number): AgentResult => ({
    op: 'read-files',
    ok: true,
    changed: false,
    restartKubelet: false,
    files: [],
    chunk: { path: file, offset, text: text.slice(offset, end), sha256: sha256(text), length: text.length },
  });
  let lo = offset + 1;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(answer(mid)) <= TERMINATION_MESSAGE_LIMIT) lo = mid;
    else hi = mid - 1;
  }
  return answer(Math.min(lo, text.length));
}

export async function readFiles(request: Request, env: AgentEnvironment): Promise<AgentResult> {
  const { texts, withheld } = await nodeFiles(env.hostRoot, request.template);
  if (request.chunk) {
    const text = texts.get(request.chunk.path);
    if (text === undefined) {
      throw new InvalidInputError(`${request.chunk.path} is not a file read-files reads on this node`);
    }
    if (request.chunk.offset > text.length) {
      throw new InvalidInputError(`${request.chunk.path}: offset ${request.chunk.offset} is past its end`);
    }
    return chunkOf(request.chunk.path, text, request.chunk.offset);
  }
  const list: AgentResult = {
    op: 'read-files',
    ok: true,
    changed: false,
    restartKubelet: false,
    files: [...texts].map(([p, text]) => ({
      path: p,
      exists: true,
      sha256: sha256(text),
      size: text.length,
    })),
    withheld: [...withheld],
    // The twin writes each host's name from its node group's template of it.
    host: { hostname: await env.hostname() },
  };
  // Cut to fit, the list would lose files without saying so.
  if (bytes(list) > TERMINATION_MESSAGE_LIMIT) {
    throw new InvalidInputError(`this node has too many files to list in one answer (${texts.size})`);
  }
  return list;
}
