import { storeStepHandler } from '../lib/aws/store-step-handler.ts';
import { finalize } from '../lib/steps/finalize.ts';
import { FinalizeEventSchema } from '../lib/steps/schemas.ts';

export const handler = storeStepHandler('finalize', FinalizeEventSchema, finalize);
