/**
 * The invariant monitor: records every interval in which the simulated cluster was in a state a migration
 * must never leave it in:
 * - `uninitialized-without-cloud-controller`: a node carried the uninitialized taint while nothing would
 *   initialise it: no CCM running the cloud-node loop, and no cloud-node-manager of its own (Azure);
 * - `two-cloud-controllers`: two controllers ran the cloud loops at once (a KCM with an in-tree provider
 *   and a CCM, or two of a kind). Leader migration is no exemption: `active()` counts a migrating process
 *   only while it holds the migration lease, so two of them active means two really ran (e.g. one not
 *   electing at all);
 * - `two-node-ipams`: two controller managers ran node IPAM at once (a KCM that kept its node-ipam
 *   controller and a CCM that took it over), each handing out podCIDRs the other does not know of;
 * - `api-unavailable`: the API did not answer, once it had answered (a booting cluster is not a violation)
 *   or inside an injected outage window;
 * - `node-deleted`: a Node was deleted (a moment, not an interval: start and end are the same). A migration
 *   deletes none, and a cloud controller that deletes one during a run (its node-lifecycle controller after
 *   a failed lookup) took a machine out of the cluster.
 * It samples every `sampleMs` and right after each relevant store change; each finished interval becomes
 * one JSON line of `<stateDir>/invariants.jsonl`.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import type { ActiveController, CloudControllers } from './cloud/index.ts';
import { hasUninitializedTaint } from './cloud/nodes.ts';
import type { TwinContext } from './context.ts';
import type { StoreEvent } from './store.ts';

export const ViolationKindSchema = z.enum([
  'uninitialized-without-cloud-controller',
  'two-cloud-controllers',
  'two-node-ipams',
  'api-unavailable',
  'node-deleted',
]);
export type ViolationKind = z.infer<typeof ViolationKindSchema>;

/** One line of invariants.jsonl (the run report reads them back). */
export const ViolationSchema = z.object({
  kind: ViolationKindSchema,
  start: z.iso.datetime(),
  end: z.iso.datetime(),
  durationMs: z.number(),
  detail: z.record(z.string(), z.unknown()),
});
export type Violation = Readonly<z.infer<typeof ViolationSchema>>;

export interface InvariantMonitor {
  violations(): readonly Violation[];
  /** Ends open intervals, writes them. */
  stop(): Promise<void>;
}

/** How many node names a violation lists (its detail also counts them all). */
const MAX_LISTED_NODES = 50;

/** An interval still open: when it began and what it has seen so far. */
interface OpenInterval {
  readonly start: number;
  readonly nodes: Set<string>;
  maxNodes: number;
  readonly controllers: Map<string, ActiveController>;
}

/** The store changes that can change what the monitor sees: taints, controller pods, leases. */
const WATCHED = new Set(['nodes', 'pods', 'leases.coordination.k8s.io']);

export function startInvariantMonitor(opts: {
  ctx: TwinContext;
  controllers: Pick<CloudControllers, 'active' | 'nodeIpams' | 'uninitialisable'>;
  apiAvailable: () => boolean;
  sampleMs?: number;
}): InvariantMonitor {
  const { ctx, controllers, apiAvailable } = opts;
  const file = path.join(ctx.stateDir, 'invariants.jsonl');
  const tainted = new Set<string>();
  const open = new Map<ViolationKind, OpenInterval>();
  const finished: Violation[] = [];
  let writes: Promise<void> = Promise.resolve();
  let apiSeen = false;
  let stopped = false;

  const record = (
    kind: ViolationKind,
    start: number,
    end: number,
    detail: Readonly<Record<string, unknown>>,
  ): void => {
    const violation: Violation = {
      kind,
      start: new Date(start).toISOString(),
      end: new Date(end).toISOString(),
      durationMs: end - start,
      detail,
    };
    finished.push(violation);
    writes = writes
      .then(() => appendFile(file, `${JSON.stringify(violation)}\n`))
      .catch((err: unknown) => process.emitWarning(`invariants.jsonl not written: ${String(err)}`));
  };

  const close = (kind: ViolationKind, now: number): void => {
    const interval = open.get(kind);
    if (!interval) return;
    open.delete(kind);
    record(kind, interval.start, now, detailOf(kind, interval));
  };

  const track = (kind: ViolationKind, holds: boolean, now: number): OpenInterval | undefined => {
    if (!holds) {
      close(kind, now);
      return undefined;
    }
    let interval = open.get(kind);
    if (!interval) {
      interval = { start: now, nodes: new Set(), maxNodes: 0, controllers: new Map() };
      open.set(kind, interval);
    }
    return interval;
  };

  const sample = (): void => {
    if (stopped) return;
    const now = Date.now();
    const active = controllers.active();
    const waiting = controllers.uninitialisable(tainted);
    const uninitialized = track('uninitialized-without-cloud-controller', waiting.length > 0, now);
    if (uninitialized) {
      for (const node of waiting) {
        if (uninitialized.nodes.size >= MAX_LISTED_NODES) break;
        uninitialized.nodes.add(node);
      }
      uninitialized.maxNodes = Math.max(uninitialized.maxNodes, waiting.length);
    }
    const two = track('two-cloud-controllers', active.length > 1, now);
    for (const c of two ? active : []) two?.controllers.set(`${c.namespace}/${c.pod}`, c);
    const ipams = controllers.nodeIpams();
    const twoIpams = track('two-node-ipams', ipams.length > 1, now);
    for (const c of twoIpams ? ipams : []) twoIpams?.controllers.set(`${c.namespace}/${c.pod}`, c);
    const up = apiAvailable();
    apiSeen ||= up;
    track('api-unavailable', !up && (apiSeen || ctx.faults.apiOutageAt(now)), now);
  };

  let sampleQueued = false;
  const onEvent = (event: StoreEvent): void => {
    if (!WATCHED.has(event.key)) return;
    if (event.key === 'nodes' && event.type === 'DELETED' && !stopped) {
      const now = Date.now();
      record('node-deleted', now, now, { node: event.object.metadata.name });
    }
    if (event.key === 'nodes') {
      if (event.type !== 'DELETED' && hasUninitializedTaint(event.object))
        tainted.add(event.object.metadata.name);
      else tainted.delete(event.object.metadata.name);
    }
    // After the other listeners of this change (the controllers) have seen it too.
    if (!sampleQueued) {
      sampleQueued = true;
      queueMicrotask(() => {
        sampleQueued = false;
        sample();
      });
    }
  };

  for (const node of ctx.store.list('nodes').items) {
    if (hasUninitializedTaint(node)) tainted.add(node.metadata.name);
  }
  const unsubscribe = ctx.store.subscribe(onEvent);
  const timer = setInterval(sample, opts.sampleMs ?? 10);
  const halt = (): void => {
    clearInterval(timer);
    unsubscribe();
  };
  ctx.signal.addEventListener('abort', halt, { once: true });
  sample();

  return {
    violations: () => finished,
    stop: async () => {
      if (!stopped) {
        sample();
        stopped = true;
        halt();
        const now = Date.now();
        for (const kind of [...open.keys()]) close(kind, now);
      }
      await writes;
    },
  };
}

function detailOf(kind: ViolationKind, interval: OpenInterval): Record<string, unknown> {
  switch (kind) {
    case 'uninitialized-without-cloud-controller':
      return { nodes: [...interval.nodes].sort(), nodeCount: interval.maxNodes };
    case 'two-cloud-controllers':
    case 'two-node-ipams':
      return { controllers: [...interval.controllers.values()] };
    case 'api-unavailable':
    case 'node-deleted':
      return {};
  }
}
