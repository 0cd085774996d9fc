/**
 * A step as a Lambda function and the local engine run it: the schema its event is parsed with and the
 * function it runs. Apart from lib/steps/index.ts (every step by id) so that a function's bundle takes its
 * own step only.
 */
import type * as z from 'zod';
import { InvalidInputError } from '../errors.ts';
import type { StepContext } from './context.ts';

export interface StepDefinition<S extends z.ZodType, C> {
  readonly schema: S;
  readonly run: (event: z.infer<S>, ctx: C) => Promise<unknown>;
}

export function step<S extends z.ZodType, C = StepContext>(
  schema: S,
  run: (event: z.infer<S>, ctx: C) => Promise<unknown>,
): StepDefinition<S, C> {
  return { schema, run };
}

/**
 * Parse the event with the step's schema and run it. An event that does not parse is InvalidInput (the
 * state machine's Catch ends the run), never a TypeError from deep inside a step.
 */
export async function runDefinition<C>(
  id: string,
  definition: StepDefinition<z.ZodType, C>,
  event: unknown,
  ctx: C,
): Promise<unknown> {
  const parsed = definition.schema.safeParse(event);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(event)'}: ${i.message}`)
      .join('; ');
    throw new InvalidInputError(`step ${id}: ${issues}`);
  }
  return definition.run(parsed.data, ctx);
}
