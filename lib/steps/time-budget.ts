/**
 * How long a step may take in one invocation, and each of its waits: the Lambda timeout of every function
 * that reaches a cluster (cdk/orchestrator.ts), the in-process budget (lib/local/context.ts), and the bound
 * the retry policies count on (state-machines/retry-policies.ts). test/steps/time-budget.test.ts
 * measures each step's waits against them.
 */

/** A wait for the cluster, or an agent call, ends after this with NotReadyYet and the state machine backs off. */
export const STEP_WAIT_MS = 60_000;

/**
 * The Lambda timeout of a step that reaches a cluster. The longest steps wait three times in a row (an agent
 * call and two mirror pods; verify's lease, canary and nodes): 3 × 60 s = 180 s, within the budget below.
 */
export const STEP_TIMEOUT_MS = 240_000;

/**
 * Left after the deadline for what a cut step still does: the look in flight, the canary's untaint, the
 * error on its way out. Lambda kills whatever runs at the timeout; nothing may be writing then.
 */
export const DEADLINE_MARGIN_MS = 20_000;

/** What the waits of one invocation share: its deadline is this far from its start. */
export const STEP_BUDGET_MS = STEP_TIMEOUT_MS - DEADLINE_MARGIN_MS;
