import { clusterStepHandler } from '../lib/aws/step-handlers.ts';
import { step } from '../lib/steps/definition.ts';
import { moveControlPlaneNode } from '../lib/steps/nodes.ts';
import { NodeEventSchema } from '../lib/steps/schemas.ts';

export const handler = clusterStepHandler(
  'move-control-plane-node',
  step(NodeEventSchema, moveControlPlaneNode),
);
