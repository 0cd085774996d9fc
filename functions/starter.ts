/** MigrationRequested (EventBridge rule) → one execution per request: see lib/aws/starter.ts. */
import { lambdaHandler } from '../lib/aws/handler.ts';
import { startRequestedRun } from '../lib/aws/starter.ts';

export const handler = lambdaHandler('starter', (event) => startRequestedRun(event));
