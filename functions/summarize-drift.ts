import { driftStepHandler } from '../lib/aws/drift-step-handler.ts';

export const handler = driftStepHandler('summarize-drift');
