import { checkDriftHandler } from '../lib/aws/drift-step-handler.ts';

export const handler = checkDriftHandler();
