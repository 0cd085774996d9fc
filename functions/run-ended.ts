/** An execution ended (EventBridge rule on Step Functions status changes): see lib/aws/run-ended.ts. */
import { lambdaHandler } from '../lib/aws/handler.ts';
import { onRunEnded } from '../lib/aws/run-ended.ts';
import { storeFromEnv } from '../lib/aws/store.ts';

export const handler = lambdaHandler('run-ended', (event) => onRunEnded(event, { store: storeFromEnv() }));
