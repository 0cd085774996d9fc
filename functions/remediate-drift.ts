import { remediateDriftHandler } from '../lib/aws/remediate-step-handler.ts';

export const handler = remediateDriftHandler();
