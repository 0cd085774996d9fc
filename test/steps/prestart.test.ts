import { describe, expect, it } from 'vitest';
import type { AgentRequest } from '../../lib/agent/protocol.ts';
import type { Progress, StepContext } from '../../lib/steps/context.ts';
import { nextInSlot, prestartFirst, prestartNext, wasPrestarted } from '../../lib/steps/prestart.ts';

const order = ['cp-1', 'cp-2', 'w-1', 'w-2', 'w-3'];
const event = (node: string, lookahead?: number) => ({
  clusterId: 'c',
  runId: 'r1',
  node,
  ...(lookahead ? { order, lookahead } : {}),
});
const request = (node: string): AgentRequest => ({ op: 'inspect', runId: node, paths: [] });

/** A context whose pre-start records its nodes, failing for those in `failing`. */
function context(failing: string[] = []) {
  const started: string[] = [];
  const progress: Progress[] = [];
  const ctx = {
    prestartAgent: async (node: string, req: AgentRequest) => {
      if (failing.includes(node)) throw new Error(`forbidden for ${node}`);
      expect(req).toEqual(request(node));
      started.push(node);
    },
    progress: (p: Progress) => progress.push(p),
  } as unknown as StepContext;
  return { ctx, started, progress };
}

describe('pre-starting the agents of later turns', () => {
  it('names the node that takes the slot next: lookahead places on, none past the end', () => {
    expect(nextInSlot(event('cp-1', 2))).toBe('w-1');
    expect(nextInSlot(event('w-2', 2))).toBeUndefined();
    expect(nextInSlot(event('w-3', 1))).toBeUndefined();
    expect(nextInSlot(event('not-listed', 1))).toBeUndefined();
    expect(nextInSlot(event('cp-1'))).toBeUndefined();
  });

  it('knows which turns were pre-started: from the lookahead-th on, or all when the first batch was', () => {
    expect([0, 1, 2, 3].map((i) => wasPrestarted(event(order[i] as string, 2)))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    expect(wasPrestarted(event('cp-1', 2), true)).toBe(true);
    expect(wasPrestarted(event('cp-1'), true)).toBe(false);
  });

  it('pre-starts the next node from a turn, and the first batch from the step before the Map', async () => {
    const one = context();
    await prestartNext(event('cp-2', 2), one.ctx, 'flip-kubelet', request);
    expect(one.started).toEqual(['w-2']);
    const first = context();
    await prestartFirst({ order, lookahead: 3 }, first.ctx, 'activate-ccm', request);
    expect(first.started.sort()).toEqual(['cp-1', 'cp-2', 'w-1']);
    const none = context();
    await prestartFirst({}, none.ctx, 'activate-ccm', request);
    await prestartNext(event('cp-1'), none.ctx, 'flip-kubelet', request);
    expect(none.started).toEqual([]);
  });

  it('reports a pre-start it could not make and goes on: the turn starts that agent itself', async () => {
    const { ctx, started, progress } = context(['cp-2']);
    await prestartFirst({ order, lookahead: 3 }, ctx, 'activate-ccm', request);
    expect(started.sort()).toEqual(['cp-1', 'w-1']);
    expect(progress).toEqual([
      {
        step: 'activate-ccm',
        message: 'could not pre-start the agent of node cp-2 (its turn starts it): forbidden for cp-2',
      },
    ]);
  });
});
