import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { restoreKubelet } from '../lib/steps/restore.ts';
import { RestoreNodeEventSchema } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler('restore-kubelet', step(RestoreNodeEventSchema, restoreKubelet));
