/**
 * The one DynamoDB table behind the run store and the cluster registry, as data that the store code and
 * the CDK stack share. Keys (ids are DNS labels, so `#` never occurs inside one):
 *
 *   pk               sk                                        item
 *   CLUSTER#<id>     LOCK                                      the run holding the cluster
 *   CLUSTER#<id>     RUN#<runId>                               a run record (less its snapshot)
 *   CLUSTER#<id>     RUN#<runId>#SNAPSHOT#<writeId>#<nnnn>     one part of that run's snapshot
 *   REGISTRY         CLUSTER#<id>                              a cluster's registry record
 *
 * A cluster's runs and their snapshot parts are one Query (`RUN#` prefix), one run with its parts is one
 * Query (a range of sort keys). The registry has a partition of its own so that listing the fleet is a
 * Query over small items, not a Scan over every run and snapshot.
 */
import { CreateTableCommand, type DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { InvalidInputError } from '../errors.ts';
import { IdSchema, parseInput } from './run-record.ts';

export const RUN_TABLE = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
} as const;

export interface TableKey {
  readonly pk: string;
  readonly sk: string;
}

const RUN = 'RUN#';
const SNAPSHOT = '#SNAPSHOT#';
/** Sorts after every character an id or a part suffix can hold. */
const AFTER_ALL = '~';

const clusterPk = (clusterId: string) => `CLUSTER#${parseInput(IdSchema, clusterId, 'cluster id')}`;
const runSk = (runId: string) => `${RUN}${parseInput(IdSchema, runId, 'run id')}`;

export const lockKey = (clusterId: string): TableKey => ({ pk: clusterPk(clusterId), sk: 'LOCK' });

export const runKey = (clusterId: string, runId: string): TableKey => ({
  pk: clusterPk(clusterId),
  sk: runSk(runId),
});

/** Part `index` of the snapshot that one write (`writeId`) stored for a run. */
export function snapshotPartKey(clusterId: string, runId: string, writeId: string, index: number): TableKey {
  return {
    pk: clusterPk(clusterId),
    sk: `${runSk(runId)}${SNAPSHOT}${writeId}#${String(index).padStart(4, '0')}`,
  };
}

/** The sort-key range holding one run and its snapshot parts (`RUN#r1` and `RUN#r1#…`, not `RUN#r10`). */
export function runRange(clusterId: string, runId: string): { pk: string; from: string; to: string } {
  const sk = runSk(runId);
  return { pk: clusterPk(clusterId), from: sk, to: `${sk}#${AFTER_ALL}` };
}

/** The partition and sort-key prefix of every run of a cluster. */
export const runsOf = (clusterId: string) => ({ pk: clusterPk(clusterId), prefix: RUN });

/** What a sort key under `RUN#` names: a run record, or a part of one of its snapshots. */
export function parseRunSk(sk: string): { runId: string; snapshot?: { writeId: string; index: number } } {
  const rest = sk.slice(RUN.length);
  const at = rest.indexOf(SNAPSHOT);
  if (at < 0) return { runId: rest };
  const [writeId = '', index = ''] = rest.slice(at + SNAPSHOT.length).split('#');
  return { runId: rest.slice(0, at), snapshot: { writeId, index: Number(index) } };
}

export const REGISTRY_PK = 'REGISTRY';

export const registryKey = (clusterId: string): TableKey => ({
  pk: REGISTRY_PK,
  sk: `CLUSTER#${parseInput(IdSchema, clusterId, 'cluster id')}`,
});

/** AWS errors the caller can act on, as named errors (throttling is retried by the SDK before this). */
export function tableError(err: unknown, tableName: string): unknown {
  if (err instanceof Error && err.name === 'ResourceNotFoundException') {
    return new InvalidInputError(
      `DynamoDB table ${tableName} does not exist: deploy the stack, or name its table`,
    );
  }
  return err;
}

/** Create the table as the CDK stack does (on demand) and wait until it takes requests: tests, local use. */
export async function createRunTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const { partitionKey, sortKey } = RUN_TABLE;
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: partitionKey.name, AttributeType: partitionKey.type },
        { AttributeName: sortKey.name, AttributeType: sortKey.type },
      ],
      KeySchema: [
        { AttributeName: partitionKey.name, KeyType: 'HASH' },
        { AttributeName: sortKey.name, KeyType: 'RANGE' },
      ],
    }),
  );
  await waitUntilTableExists(
    { client, maxWaitTime: 60, minDelay: 0.02, maxDelay: 1 },
    { TableName: tableName },
  );
}
