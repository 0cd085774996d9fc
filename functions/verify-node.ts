import { clusterStepHandler } from '../lib/aws/step-handlers.ts';

export const handler = clusterStepHandler('verify-node');
