import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { preflight } from '../lib/steps/preflight.ts';
import { PreflightEventSchema } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler('preflight', step(PreflightEventSchema, preflight));
