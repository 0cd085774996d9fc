import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { NodeEventSchema } from '../lib/steps/schemas.ts';
import { verifyNode } from '../lib/steps/verify-node.ts';

export const handler = clusterStepHandler('verify-node', step(NodeEventSchema, verifyNode));
