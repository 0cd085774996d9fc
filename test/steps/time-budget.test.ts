/**
 * No step's worst case exceeds its function's timeout. Each step runs on the twin (an upgrade and a downgrade
 * of a three-control-plane OpenStack cluster whose cloud config the CCM needs translated: leader migration,
 * the copies on every control-plane node, the hand-back) with deadlines that record every draw on them:
 * each wait and each agent call, with the bound the code gave it. A step's worst case is the longest chain
 * of draws, each begun after the one before ended, at their full bounds; it must fit in the timeout the CDK
 * stack gives the step's function, less the deadline's margin. And the Task that invokes a function must
 * outlast it, or the state machine would go on while the function still writes.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { talksToCluster } from '../../cdk/bundling.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { localContext } from '../../lib/local/context.ts';
import { runLocally } from '../../lib/local/engine.ts';
import { type MigrationKind, migrationWorkflow, stepHandlers } from '../../lib/local/migration.ts';
import { DEADLINE_MARGIN_MS } from '../../lib/steps/time-budget.ts';
import { STEP_IDS, type StepId } from '../../state-machines/steps.ts';
import { testStack } from '../cdk/stack.ts';
import { type E2E, FAST_RETRIES, startE2E } from '../e2e/harness.ts';
import { fixtureSpec } from '../twin/running-twin.ts';

const SECRET_MINI = fileURLToPath(new URL('../fixtures/twins/openstack-secret-mini.yaml', import.meta.url));

/** One draw on an invocation's deadline: its bound, and when it began and ended in the order of events. */
interface Draw {
  readonly boundMs: number;
  readonly began: number;
  readonly ended: number;
}

let events = 0;

/** An invocation's deadline that never cuts, and records each draw on it (not the draws nested in one). */
class RecordingDeadline extends Deadline {
  readonly draws: Draw[] = [];

  constructor() {
    super(Number.POSITIVE_INFINITY, true);
  }

  override async within<T>(ms: number, work: (bound: Deadline) => Promise<T>): Promise<T> {
    const began = ++events;
    try {
      return await super.within(ms, work);
    } finally {
      this.draws.push({ boundMs: ms, began, ended: ++events });
    }
  }
}

/** The longest chain of draws in which each began after the one before it ended, at their full bounds. */
function worstCaseMs(draws: readonly Draw[]): number {
  const sorted = [...draws].sort((a, b) => a.began - b.began);
  const chain: number[] = [];
  sorted.forEach((draw, i) => {
    const before = sorted.flatMap((d, j) => (j < i && d.ended < draw.began ? [chain[j] ?? 0] : []));
    chain.push(draw.boundMs + Math.max(0, ...before));
  });
  return Math.max(0, ...chain);
}

/** Every invocation of the runs, with its deadline. */
const invocations: { step: StepId; deadline: RecordingDeadline }[] = [];
/** Per step, the worst case of its invocations. */
const worst = new Map<StepId, number>();
let e2e: E2E | undefined;

async function run(kind: MigrationKind, runId: string): Promise<void> {
  const run = e2e as E2E;
  const result = await runLocally({
    workflow: migrationWorkflow(kind),
    handlers: stepHandlers((step) => {
      const deadline = new RecordingDeadline();
      invocations.push({ step, deadline });
      return { ...localContext({ clients: run.t, pollMs: 10 }, deadline), store: run.store };
    }),
    input: { clusterId: 'openstack-secret-mini', runId, maxUnavailable: 1, options: {} },
    retryIntervalOverrides: FAST_RETRIES,
  });
  expect(result.error, result.error?.cause).toBeUndefined();
}

beforeAll(async () => {
  const spec = await fixtureSpec(SECRET_MINI);
  // Three control-plane nodes: leader migration, and a translated cloud config written on each in turn.
  e2e = await startE2E({
    ...spec,
    nodeGroups: spec.nodeGroups.map((g) => (g.role === 'control-plane' ? { ...g, count: 3 } : g)),
  });
  await run('upgrade', 'up-budget');
  await run('downgrade', 'down-budget');
  for (const { step, deadline } of invocations) {
    worst.set(step, Math.max(worst.get(step) ?? 0, worstCaseMs(deadline.draws)));
  }
}, 120_000);
afterAll(async () => {
  await e2e?.stop();
});

it('runs every step that reaches the cluster', () => {
  expect([...worst.keys()]).toEqual(expect.arrayContaining(STEP_IDS.filter(talksToCluster)));
});

it("fits each step's worst-case waits in its function's timeout, less the deadline's margin", () => {
  const { orchestrator } = testStack();
  const over: string[] = [];
  for (const [step, worstMs] of worst) {
    const timeoutMs = orchestrator.functions.get(step)?.timeout?.toMilliseconds() ?? 0;
    if (worstMs > timeoutMs - DEADLINE_MARGIN_MS) {
      over.push(`${step}: ${worstMs / 1000} s of waits, timeout ${timeoutMs / 1000} s`);
    }
  }
  expect(over).toEqual([]);
});

/** Every state of a definition, those inside Maps and Parallels too, by name. */
function statesOf(definition: Record<string, unknown>): Map<string, { TimeoutSeconds?: number }> {
  const found = new Map<string, { TimeoutSeconds?: number }>();
  const walk = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    const states = (node as { States?: Record<string, unknown> }).States;
    for (const [name, state] of Object.entries(states ?? {}))
      found.set(name, state as { TimeoutSeconds?: number });
    for (const child of Object.values(node)) walk(child);
  };
  walk(definition);
  return found;
}

it('gives each step Task more time than its function, so that no Task times out while its function writes', () => {
  const { orchestrator } = testStack();
  const short: string[] = [];
  for (const kind of ['upgrade', 'downgrade'] as const) {
    const { definition, taskSteps } = migrationWorkflow(kind);
    const states = statesOf(definition);
    for (const [stateName, step] of taskSteps) {
      const taskMs = (states.get(stateName)?.TimeoutSeconds ?? 0) * 1000;
      const functionMs = orchestrator.functions.get(step)?.timeout?.toMilliseconds() ?? 0;
      if (taskMs <= functionMs)
        short.push(`${kind} "${stateName}": ${taskMs / 1000} s ≤ ${functionMs / 1000} s`);
    }
  }
  expect(short).toEqual([]);
});
