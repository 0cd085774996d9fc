/**
 * The one shell every Lambda function of ccm-migrate has: middy around a plain async function, with
 * Powertools' middlewares (lib/aws/logger.ts: the tracer's segment for the invocation, the Lambda context
 * and cold start on every log line), a log line per invocation with ids only, and errors passed on as they
 * are. The tracer records no response (a trace carries timings, never a payload); an error's name and
 * message go on its segment as they go to Step Functions' Cause (ours, kept clean). Step Functions' Retry and
 * Catch match the error's `name` (lib/errors.ts sets it explicitly, so minification keeps it); the Node runtime reports
 * `name` as the error type, so nothing here may wrap or replace an error.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type * as z from 'zod';
import { Deadline } from '../kube/deadline.ts';
import { DEADLINE_MARGIN_MS } from '../steps/time-budget.ts';
import { parseInput } from '../store/run-record.ts';
import { idsOf, type Logger, lambdaLogger, powertools } from './logger.ts';

/** What ccm-migrate reads of the Lambda context: the time left before Lambda ends the invocation. */
export interface LambdaContext {
  getRemainingTimeInMillis(): number;
}

type Work = (event: unknown, lambda: LambdaContext) => Promise<unknown>;

export function lambdaHandler(step: string, work: Work, logger: Logger = lambdaLogger) {
  return middy()
    .use(captureLambdaHandler(powertools.tracer, { captureResponse: false }))
    .use(injectLambdaContext(powertools.logger))
    .handler(async (event: unknown, lambda: LambdaContext) => {
      const started = Date.now();
      const ids = { step, ...idsOf(event) };
      try {
        const result = await work(event, lambda);
        logger.info('done', { ...ids, durationMs: Date.now() - started });
        return result;
      } catch (err) {
        const errorName = (err as { name?: string }).name ?? 'Error';
        // The message is not logged: Step Functions records it as the Cause, and it is ours to keep clean.
        logger.error('failed', { ...ids, errorName, durationMs: Date.now() - started });
        throw err;
      }
    });
}

/**
 * A step's function whose event is parsed with the step's schema (InvalidInput, never a TypeError from deep
 * inside) and run with the context `contextFor` builds for this invocation.
 */
export function parsedStepHandler<S extends z.ZodType, C>(
  id: string,
  schema: S,
  run: (event: z.infer<S>, ctx: C) => Promise<unknown>,
  contextFor: (logger: Logger, lambda: LambdaContext) => C,
  logger: Logger,
) {
  return lambdaHandler(
    id,
    async (event, lambda) =>
      run(parseInput(schema, event, `event of step ${id}`), contextFor(logger, lambda)),
    logger,
  );
}

/**
 * The invocation's deadline, made first thing (the secret and the clients take from it too): Lambda's
 * remaining time less the margin a cut step needs to end before Lambda kills it.
 */
export function invocationDeadline(lambda: LambdaContext): Deadline {
  return Deadline.in(lambda.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS);
}
