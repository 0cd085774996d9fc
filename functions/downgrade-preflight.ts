import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { downgradePreflight } from '../lib/steps/downgrade-preflight.ts';
import { PreflightEventSchema } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler(
  'downgrade-preflight',
  step(PreflightEventSchema, downgradePreflight),
);
