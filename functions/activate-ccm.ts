import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { activateCcm } from '../lib/steps/ccm.ts';
import { step } from '../lib/steps/definition.ts';
import { ActivateEventSchema } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler('activate-ccm', step(ActivateEventSchema, activateCcm));
