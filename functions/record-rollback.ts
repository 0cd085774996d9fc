import { storeStepHandler } from '../lib/aws/store-step-handler.ts';
import { recordRollback } from '../lib/steps/finalize.ts';
import { FailureEventSchema } from '../lib/steps/schemas.ts';

export const handler = storeStepHandler('record-rollback', FailureEventSchema, recordRollback);
