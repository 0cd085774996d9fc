import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { RunIds } from '../lib/steps/schemas.ts';
import { verify } from '../lib/steps/verify.ts';

export const handler = clusterStepHandler('verify', step(RunIds, verify));
