import { clusterStepHandler } from '../lib/aws/step-handlers.ts';

export const handler = clusterStepHandler('move-control-plane-node');
