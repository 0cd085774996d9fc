/**
 * How long a step may take in one invocation, and each of its waits: the Lambda timeout of every function
 * that reaches a cluster (cdk/orchestrator.ts), the in-process budget (lib/local/context.ts), and the bound
 * the retry policies count on (state-machines/retry-policies.ts). test/steps/time-budget.test.ts
 * measures each step's waits against them.
 */

/** A wait for the cluster, or an agent call, ends after this with NotReadyYet and the state machine backs off. */
export const STEP_WAIT_MS = 60_000;

/**
 * The Lambda timeout of a step that reaches a cluster. The longest, preflight, waits four times in a row
 * (every node Ready, the first node's inspection alone, then the others', then the cloud config's dry
 * run): 4 × 60 s = 240 s, within the budget below.
 */
export const STEP_TIMEOUT_MS = 300_000;

/**
 * Left after the deadline for what a cut step still does: the look in flight, the node check's untaint, the
 * error on its way out. Lambda kills whatever runs at the timeout; nothing may be writing then.
 */
export const DEADLINE_MARGIN_MS = 20_000;

/** What the waits of one invocation share: its deadline is this far from its start. */
export const STEP_BUDGET_MS = STEP_TIMEOUT_MS - DEADLINE_MARGIN_MS;
