/**
 * The cluster registry: which clusters the orchestrator manages, how to reach them and what they should
 * be. A record names the Secrets Manager secret that holds a cluster's kubeconfig, never the kubeconfig:
 * records are listed, logged and sent through Step Functions payloads. Files in local mode, the run table
 * in AWS (its own partition, see table.ts).
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { writeAtomically } from '../agent/files.ts';
import { InvalidInputError } from '../errors.ts';
import { PROVIDERS } from '../providers/catalog.ts';
import { UpgradeInputSchema } from '../steps/schemas.ts';
import { IdSchema, parseInput } from './run-record.ts';
import { REGISTRY_PK, registryKey, tableError } from './table.ts';

/** A Secrets Manager secret's ARN: anything else (a kubeconfig, a token, a path) is refused. */
const SecretArnSchema = z
  .string()
  .max(2048)
  .regex(
    /^arn:aws[a-z-]*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$/,
    'the ARN of a Secrets Manager secret (arn:aws:secretsmanager:<region>:<account>:secret:<name>)',
  );

/** Kubernetes label syntax: short, plain values that cannot carry a credential's length or characters. */
const LabelsSchema = z.record(
  z
    .string()
    .regex(
      /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
      'a label key',
    ),
  z
    .string()
    .regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/, 'a label value (at most 63 characters)'),
);

export const ClusterRecordSchema = z.strictObject({
  clusterId: IdSchema,
  provider: z.enum(PROVIDERS),
  distribution: z.literal('kubeadm'),
  kubeconfigSecretArn: SecretArnSchema,
  /** Where drift checks expect the cluster to be, and where runs take it. */
  desiredMode: z.enum(['external', 'in-tree']),
  policy: z.strictObject({
    maxUnavailable: UpgradeInputSchema.shape.maxUnavailable,
    /** Whether a failed upgrade rolls back by itself. */
    autoRollback: z.boolean(),
    /** Whether a drift check that finds this cluster drifted requests a run back to `desiredMode`. */
    autoRemediate: z.boolean().optional(),
  }),
  labels: LabelsSchema.optional(),
});
export type ClusterRecord = z.output<typeof ClusterRecordSchema>;
export type ClusterRecordInput = z.input<typeof ClusterRecordSchema>;

export interface ClusterRegistry {
  /** Add or replace a cluster's record; returns it as stored (defaults applied). */
  put(record: ClusterRecordInput): Promise<ClusterRecord>;
  get(clusterId: string): Promise<ClusterRecord | undefined>;
  /** Every cluster, by id. */
  list(): Promise<ClusterRecord[]>;
  /** Whether there was a record to remove. */
  remove(clusterId: string): Promise<boolean>;
}

const parseRecord = (value: unknown, what: string) => parseInput(ClusterRecordSchema, value, what);

/** <dir>/registry/<clusterId>.json, one file per cluster, replaced atomically. */
export class LocalClusterRegistry implements ClusterRegistry {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = path.resolve(dir);
  }

  async put(record: ClusterRecordInput): Promise<ClusterRecord> {
    const parsed = parseRecord(record, 'cluster record');
    await writeAtomically(this.dir, this.#relative(parsed.clusterId), `${JSON.stringify(parsed, null, 2)}\n`);
    return parsed;
  }

  async get(clusterId: string): Promise<ClusterRecord | undefined> {
    const file = path.join(this.dir, this.#relative(clusterId));
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new InvalidInputError(`${file} is not JSON: remove it or put the cluster again`);
    }
    return parseRecord(value, `cluster record ${file}`);
  }

  async list(): Promise<ClusterRecord[]> {
    let names: string[];
    try {
      names = await readdir(path.join(this.dir, 'registry'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    // Record files only: temp files (dot files) may be left by a killed process.
    const ids = names.filter((n) => !n.startsWith('.') && n.endsWith('.json')).map((n) => n.slice(0, -5));
    const records = await Promise.all(ids.sort().map((id) => this.get(id)));
    return records.filter((r): r is ClusterRecord => r !== undefined);
  }

  async remove(clusterId: string): Promise<boolean> {
    const file = path.join(this.dir, this.#relative(clusterId));
    const existed = await readFile(file).then(
      () => true,
      () => false,
    );
    await rm(file, { force: true });
    return existed;
  }

  #relative(clusterId: string): string {
    return path.join('registry', `${parseInput(IdSchema, clusterId, 'cluster id')}.json`);
  }
}

export interface DynamoClusterRegistryOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Records per Query page (default: DynamoDB's 1 MB pages). */
  readonly pageSize?: number;
}

/** Records under pk REGISTRY, sk CLUSTER#<id>, as plain attributes (readable in the console). */
export class DynamoClusterRegistry implements ClusterRegistry {
  readonly tableName: string;
  readonly #doc: DynamoDBDocumentClient;
  readonly #pageSize: number | undefined;

  constructor(opts: DynamoClusterRegistryOptions) {
    this.tableName = opts.tableName;
    this.#doc = DynamoDBDocumentClient.from(opts.client);
    this.#pageSize = opts.pageSize;
  }

  async put(record: ClusterRecordInput): Promise<ClusterRecord> {
    const parsed = parseRecord(record, 'cluster record');
    await this.#send(() =>
      this.#doc.send(
        new PutCommand({ TableName: this.tableName, Item: { ...parsed, ...registryKey(parsed.clusterId) } }),
      ),
    );
    return parsed;
  }

  async get(clusterId: string): Promise<ClusterRecord | undefined> {
    const key = registryKey(clusterId);
    const { Item } = await this.#send(() =>
      this.#doc.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true })),
    );
    return Item ? this.#parse(Item) : undefined;
  }

  async list(): Promise<ClusterRecord[]> {
    const items = await this.#send(async () => {
      const found: Record<string, unknown>[] = [];
      const pages = paginateQuery(
        { client: this.#doc, ...(this.#pageSize ? { pageSize: this.#pageSize } : {}) },
        {
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': REGISTRY_PK },
        },
      );
      for await (const page of pages) found.push(...(page.Items ?? []));
      return found;
    });
    return items.map((i) => this.#parse(i));
  }

  async remove(clusterId: string): Promise<boolean> {
    const { Attributes } = await this.#send(() =>
      this.#doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: registryKey(clusterId),
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    return Attributes !== undefined;
  }

  async #send<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw tableError(err, this.tableName);
    }
  }

  #parse(item: Record<string, unknown>): ClusterRecord {
    const { pk, sk, ...record } = item;
    return parseRecord(record, `cluster record ${String(pk)}/${String(sk)} of table ${this.tableName}`);
  }
}
