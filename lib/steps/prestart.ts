/**
 * Agents off the critical path: while a node's turn runs, the agent Job of the node whose turn comes when
 * this slot frees (`lookahead` places on in the Map's order) is created, so its pod starts during this
 * turn's restart instead of after it. That agent touches nothing until its own turn gives it the go
 * (lib/kube/agent-account.ts), so maxUnavailable and one control-plane node at a time hold as before.
 */
import type { AgentRequest } from '../agent/protocol.ts';
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

/**
 * Pre-start these nodes' agents with the requests they will run. A failure only costs a node its head
 * start (its turn creates the Job as before): it is reported, never thrown.
 */
async function prestart(
  nodes: readonly string[],
  ctx: StepContext,
  step: string,
  request: (node: string) => AgentRequest,
): Promise<void> {
  const start = ctx.prestartAgent;
  if (!start) return;
  await Promise.all(
    nodes.map((node) =>
      start(node, request(node)).catch((err: unknown) => {
        ctx.progress({
          step,
          message: `could not pre-start the agent of node ${node} (its turn starts it): ${(err as Error).message}`,
        });
      }),
    ),
  );
}

/** A node's turn: pre-start the agent of the node that takes this slot next. */
export async function prestartNext(
  event: NodeEvent,
  ctx: StepContext,
  step: string,
  request: (node: string) => AgentRequest,
): Promise<void> {
  const next = nextInSlot(event);
  await prestart(next ? [next] : [], ctx, step, request);
}

/** The step before a node Map: pre-start its first batch's agents. */
export async function prestartFirst(
  event: PrestartEvent,
  ctx: StepContext,
  step: string,
  request: (node: string) => AgentRequest,
): Promise<void> {
  if (!event.order || !event.lookahead) return;
  await prestart(event.order.slice(0, event.lookahead), ctx, step, request);
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
