/**
 * The nodes' root filesystems: `<stateDir>/nodes/<node>/<absolute path>` for each file of the node's group,
 * rendered for that node. A node directory that already exists (a twin restarted on its state dir) keeps
 * its files, edits included; a node that joins the running twin gets a fresh one.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { NodePlacement } from '../cloud/model.ts';
import { nodeRoot } from '../context.ts';
import { type NodeGroup, renderHostFile } from '../spec.ts';

/** A node's files by absolute host path, before rendering. */
type HostFiles = Readonly<Record<string, string>>;

/** Nodes written between two turns of the event loop. */
const NODES_PER_BATCH = 250;

/**
 * Write one node's files into a scratch directory, then rename it into place, so that a twin stopped
 * half-way never leaves a node directory that a restart would keep with files missing.
 */
function writeNode(stateDir: string, placement: NodePlacement, files: HostFiles): void {
  const root = nodeRoot(stateDir, placement.name);
  const scratch = `${root}.partial`;
  rmSync(scratch, { recursive: true, force: true });
  const made = new Set<string>();
  for (const [file, text] of Object.entries(files)) {
    const target = path.join(scratch, file);
    const dir = path.dirname(target);
    if (!made.has(dir)) {
      mkdirSync(dir, { recursive: true });
      made.add(dir);
    }
    writeFileSync(
      target,
      renderHostFile(text, { nodeName: placement.name, nodeIP: placement.ip, index: placement.index }),
    );
  }
  mkdirSync(scratch, { recursive: true });
  renameSync(scratch, root);
}

/**
 * Write the files of every node that has no directory yet. Synchronous writes in batches: thousands of
 * small files go faster without a promise each, and the loop still turns between batches.
 */
export async function writeHostFiles(
  stateDir: string,
  placements: readonly NodePlacement[],
  groups: readonly NodeGroup[],
): Promise<void> {
  const byName = new Map(groups.map((g) => [g.name, g]));
  mkdirSync(path.join(stateDir, 'nodes'), { recursive: true });
  for (let i = 0; i < placements.length; i += NODES_PER_BATCH) {
    for (const placement of placements.slice(i, i + NODES_PER_BATCH)) {
      const group = byName.get(placement.group);
      if (group && !existsSync(nodeRoot(stateDir, placement.name)))
        writeNode(stateDir, placement, group.files);
    }
    await yieldToLoop();
  }
}

/**
 * Write the files of a node that joins the running twin. Its disk is new, so a directory an earlier twin
 * left on this state dir under the same name (a node that joined that twin) is replaced, not kept.
 */
export function writeJoiningHostFiles(stateDir: string, placement: NodePlacement, files: HostFiles): void {
  rmSync(nodeRoot(stateDir, placement.name), { recursive: true, force: true });
  writeNode(stateDir, placement, files);
}
