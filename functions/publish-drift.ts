import { fleetStepHandler } from '../lib/aws/fleet-step-handler.ts';
import { PublishDriftEventSchema, publishDrift } from '../lib/drift/steps.ts';

export const handler = fleetStepHandler('publish-drift', PublishDriftEventSchema, publishDrift);
