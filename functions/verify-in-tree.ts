import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { verifyInTree } from '../lib/steps/restore.ts';
import { RestoreEventSchema } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler('verify-in-tree', step(RestoreEventSchema, verifyInTree));
