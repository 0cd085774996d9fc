/** Lambda's context as a function sees it at the start of an invocation: its whole timeout ahead. */
import { STEP_TIMEOUT_MS } from '../../lib/steps/time-budget.ts';

export const LAMBDA_CONTEXT = { getRemainingTimeInMillis: () => STEP_TIMEOUT_MS } as never;
