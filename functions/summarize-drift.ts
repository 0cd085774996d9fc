import { fleetStepHandler } from '../lib/aws/fleet-step-handler.ts';
import { SummarizeDriftEventSchema, summarizeDrift } from '../lib/drift/steps.ts';

export const handler = fleetStepHandler('summarize-drift', SummarizeDriftEventSchema, summarizeDrift);
