import { driftStepHandler } from '../lib/aws/drift-step-handler.ts';

export const handler = driftStepHandler('list-clusters');
