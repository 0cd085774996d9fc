import { storeStepHandler } from '../lib/aws/store-step-handler.ts';
import { recordFailure } from '../lib/steps/finalize.ts';
import { FailureEventSchema } from '../lib/steps/schemas.ts';

export const handler = storeStepHandler('record-failure', FailureEventSchema, recordFailure);
