/**
 * Every node's files as a twin needs them, read through the node agent's `read-files` (one listing Job per
 * node, ten at a time, then one Job per chunk of each distinct file, read on the first node that has it):
 * thousands of identical workers cost one read of each file, not one per node. Each file is checked
 * against the sha256 its listing gave, so a file that changed between two Jobs is refused, not mixed.
 */
import { createHash } from 'node:crypto';
import pLimit from 'p-limit';
import type { AgentRequest, AgentResult } from '../agent/protocol.ts';
import { AgentFailedError } from '../errors.ts';

export type WithheldKind = NonNullable<AgentResult['withheld']>[number]['kind'];

/** A node as the snapshot reads it: its name and the address its files are templated with. */
export interface NodeAddressing {
  readonly name: string;
  readonly ip: string;
}

export interface NodeFileSet extends NodeAddressing {
  /** The host's own name, as the agent's Job saw it. */
  readonly hostname: string;
  /** By host path: the sha256 of its templated text (a key of ClusterFiles.texts). */
  readonly files: Readonly<Record<string, string>>;
  /** By host path: what the node names but the agent did not read. */
  readonly withheld: Readonly<Record<string, WithheldKind>>;
}

export interface ClusterFiles {
  readonly nodes: readonly NodeFileSet[];
  /** Each distinct templated text once, by its sha256. */
  readonly texts: ReadonlyMap<string, string>;
  /** Agent Jobs run. */
  readonly jobs: number;
}

export type AgentCall = (node: string, request: AgentRequest) => Promise<AgentResult>;

export interface ReadClusterFilesOptions {
  readonly nodes: readonly NodeAddressing[];
  readonly agent: AgentCall;
  readonly runId: string;
  /** Listing Jobs at once. @default 10 */
  readonly concurrency?: number;
  readonly onNode?: (node: string) => void;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

async function listNode(node: NodeAddressing, opts: ReadClusterFilesOptions): Promise<NodeFileSet> {
  const answer = await opts.agent(node.name, {
    op: 'read-files',
    runId: opts.runId,
    template: { nodeName: node.name, nodeIP: node.ip },
  });
  opts.onNode?.(node.name);
  return {
    ...node,
    hostname: answer.host?.hostname ?? node.name,
    files: Object.fromEntries(answer.files.map((f) => [f.path, f.sha256 ?? ''])),
    withheld: Object.fromEntries((answer.withheld ?? []).map((w) => [w.path, w.kind])),
  };
}

/** One file's templated text, chunk by chunk, checked against the sha256 it was listed with. */
async function readText(
  node: NodeAddressing,
  file: string,
  expected: string,
  opts: ReadClusterFilesOptions,
): Promise<{ text: string; jobs: number }> {
  let text = '';
  let jobs = 0;
  for (;;) {
    const { chunk } = await opts.agent(node.name, {
      op: 'read-files',
      runId: opts.runId,
      template: { nodeName: node.name, nodeIP: node.ip },
      chunk: { path: file, offset: text.length },
    });
    jobs += 1;
    if (!chunk || chunk.sha256 !== expected) {
      throw new AgentFailedError(
        `agent on node ${node.name}: ${file} changed while it was read; take the snapshot again`,
      );
    }
    text += chunk.text;
    if (text.length >= chunk.length) break;
  }
  if (sha256(text) !== expected) {
    throw new AgentFailedError(`agent on node ${node.name}: ${file} did not read back whole`);
  }
  return { text, jobs };
}

export async function readClusterFiles(opts: ReadClusterFilesOptions): Promise<ClusterFiles> {
  const limit = pLimit(opts.concurrency ?? 10);
  const nodes = await Promise.all(opts.nodes.map((n) => limit(() => listNode(n, opts))));
  // Where each distinct text is first found.
  const sources = new Map<string, { node: NodeFileSet; file: string }>();
  for (const node of nodes) {
    for (const [file, hash] of Object.entries(node.files)) {
      if (!sources.has(hash)) sources.set(hash, { node, file });
    }
  }
  const reads = await Promise.all(
    [...sources].map(([hash, { node, file }]) =>
      limit(async () => [hash, await readText(node, file, hash, opts)] as const),
    ),
  );
  return {
    nodes,
    texts: new Map(reads.map(([hash, r]) => [hash, r.text])),
    jobs: nodes.length + reads.reduce((n, [, r]) => n + r.jobs, 0),
  };
}
