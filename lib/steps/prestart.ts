/**
 * Agents off the critical path: while a node's turn runs, the agent Job of the node whose turn comes when
 * this slot frees (`lookahead` places on in the Map's order) is created, so its pod starts during this
 * turn's restart instead of after it. That agent touches nothing until its own turn gives it the go
 * (lib/kube/agent-account.ts), so maxUnavailable and one control-plane node at a time hold as before.
 */
import pLimit from 'p-limit';
import type { AgentRequest } from '../agent/protocol.ts';
import type { PrestartedAgent } from '../kube/agent-job.ts';
import type { StepContext } from './context.ts';
import type { NodeEvent, PrestartEvent } from './schemas.ts';

/**
 * Whether this turn's agent was pre-started by an earlier one: from the `lookahead`-th of the order on, or
 * every one where the step before the Map pre-started the first batch (`firstBatch`).
 */
export function wasPrestarted(event: NodeEvent, firstBatch = false): boolean {
  if (!event.order || !event.lookahead) return false;
  const at = event.order.indexOf(event.node);
  return at >= (firstBatch ? 0 : event.lookahead);
}

/** The node whose turn follows this one's in its slot, if any. */
export function nextInSlot(event: NodeEvent): string | undefined {
  if (!event.order || !event.lookahead) return undefined;
  const at = event.order.indexOf(event.node);
  return at < 0 ? undefined : event.order[at + event.lookahead];
}

/** How many Jobs a pre-start creates at once (a preflight pre-starts one per node). */
const PRESTART_CONCURRENCY = 100;

/**
 * Pre-start these nodes' agents with the requests they will run; the Jobs created. A failure only costs a
 * node its head start (its turn creates the Job as before): reported, once for all of them, never thrown.
 */
export async function prestartAgents(
  nodes: readonly string[],
  ctx: Pick<StepContext, 'prestartAgent' | 'progress'>,
  step: string,
  request: (node: string) => AgentRequest,
): Promise<PrestartedAgent[]> {
  const start = ctx.prestartAgent;
  if (!start) return [];
  const limit = pLimit(PRESTART_CONCURRENCY);
  const failed: { node: string; err: unknown }[] = [];
  const started = await Promise.all(
    nodes.map((node) =>
      limit(() =>
        start(node, request(node)).catch((err: unknown) => {
          failed.push({ node, err });
          return undefined;
        }),
      ),
    ),
  );
  const [first] = failed;
  if (first) {
    const which =
      failed.length === 1
        ? `the agent of node ${first.node} (its turn starts it)`
        : `the agents of ${failed.length} nodes, ${first.node} the first (their turns start them)`;
    ctx.progress({ step, message: `could not pre-start ${which}: ${(first.err as Error).message}` });
  }
  return started.filter((p) => p !== undefined);
}

/** A node's turn: pre-start the agent of the node that takes this slot next. */
export async function prestartNext(
  event: NodeEvent,
  ctx: StepContext,
  step: string,
  request: (node: string) => AgentRequest,
): Promise<void> {
  const next = nextInSlot(event);
  await prestartAgents(next ? [next] : [], ctx, step, request);
}

/** The step before a node Map: pre-start its first batch's agents. */
export async function prestartFirst(
  event: PrestartEvent,
  ctx: StepContext,
  step: string,
  request: (node: string) => AgentRequest,
): Promise<void> {
  if (!event.order || !event.lookahead) return;
  await prestartAgents(event.order.slice(0, event.lookahead), ctx, step, request);
}

/**
 * A turn's own work beside its pre-start: the turn's result (or error) once both are done, so that no
 * pre-start is left in flight when the step ends (a frozen Lambda would send it in a later invocation).
 */
export async function besidePrestart<T>(turn: Promise<T>, prestarting: Promise<void>): Promise<T> {
  const [result] = await Promise.allSettled([turn, prestarting]);
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}
