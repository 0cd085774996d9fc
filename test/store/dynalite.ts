/**
 * A real DynamoDB (dynalite) on loopback for store tests: one server per test file, a fresh table per
 * test, and clients of their own (separate connections, as separate Lambdas have).
 */

import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createRunTable } from '../../lib/store/table.ts';

// dynalite ships no types: what the harness uses of it.
const dynalite = createRequire(import.meta.url)('dynalite') as (opts: { createTableMs: number }) => Server;

export interface Dynalite {
  readonly endpoint: string;
  /** A client with a connection pool of its own. */
  client(): DynamoDBClient;
  /** A new, empty table with the run table's keys; its name. */
  table(): Promise<string>;
  close(): Promise<void>;
}

export async function startDynalite(): Promise<Dynalite> {
  const server = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clients: DynamoDBClient[] = [];
  let tables = 0;
  const client = () => {
    const c = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    clients.push(c);
    return c;
  };
  const admin = client();
  return {
    endpoint,
    client,
    async table() {
      tables += 1;
      const name = `runs-${tables}`;
      await createRunTable(admin, name);
      return name;
    },
    async close() {
      for (const c of clients) c.destroy();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
