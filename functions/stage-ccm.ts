import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { stageCcm } from '../lib/steps/ccm.ts';
import { step } from '../lib/steps/definition.ts';
import { RunIds } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler('stage-ccm', step(RunIds, stageCcm));
