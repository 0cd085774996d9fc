/** Step handlers for definition tests: each call recorded, each answer from `answers` (default `{}`). */
import type { StepHandler } from '../../lib/local/engine.ts';
import type { StepId } from '../../state-machines/steps.ts';

export interface Call {
  readonly step: StepId;
  readonly event: Record<string, unknown>;
}

export function recording(
  steps: readonly StepId[],
  answers: Partial<Record<StepId, StepHandler>> = {},
): { calls: Call[]; handlers: Record<StepId, StepHandler> } {
  const calls: Call[] = [];
  const handlers = Object.fromEntries(
    steps.map((step) => [
      step,
      async (event: unknown) => {
        calls.push({ step, event: event as Record<string, unknown> });
        return answers[step] ? answers[step](event) : {};
      },
    ]),
  ) as Record<StepId, StepHandler>;
  return { calls, handlers };
}
