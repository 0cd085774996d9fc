/** The run store and cluster registry a function uses in AWS: the DynamoDB table the stack made, named in the environment. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoRunStore } from '../store/dynamo-store.ts';
import { type ClusterRegistry, DynamoClusterRegistry } from '../store/registry.ts';
import type { RunStore } from '../store/run-store.ts';
import { ENV, envVar } from './env.ts';

let store: RunStore | undefined;
let registry: ClusterRegistry | undefined;
let client: DynamoDBClient | undefined;

/** One store per container: its client keeps connections warm across invocations. */
export function storeFromEnv(env: NodeJS.ProcessEnv = process.env): RunStore {
  client ??= new DynamoDBClient({});
  store ??= new DynamoRunStore({ client, tableName: envVar(ENV.tableName, env) });
  return store;
}

/** The registry on the same table (its own partition), one per container. */
export function registryFromEnv(env: NodeJS.ProcessEnv = process.env): ClusterRegistry {
  client ??= new DynamoDBClient({});
  registry ??= new DynamoClusterRegistry({ client, tableName: envVar(ENV.tableName, env) });
  return registry;
}
