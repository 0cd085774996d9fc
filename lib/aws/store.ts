/** The run store a function uses in AWS: the DynamoDB table the stack made, named in the environment. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoRunStore } from '../store/dynamo-store.ts';
import type { RunStore } from '../store/run-store.ts';
import { ENV, envVar } from './env.ts';

let store: RunStore | undefined;

/** One store per container: its client keeps connections warm across invocations. */
export function storeFromEnv(env: NodeJS.ProcessEnv = process.env): RunStore {
  store ??= new DynamoRunStore({ client: new DynamoDBClient({}), tableName: envVar(ENV.tableName, env) });
  return store;
}
