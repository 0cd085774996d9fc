/**
 * An API server that takes a request and never answers (a connection black-holed when its node went away
 * without a reset): the request ends after the clients' request timeout as ClusterUnreachable, which the
 * waits and retries ride out, instead of hanging the step until Lambda's timeout. Watches keep theirs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ClusterUnreachableError } from '../../lib/errors.ts';
import { clientsFromKubeconfigFile, REQUEST_TIMEOUT_MS } from '../../lib/kube/clients.ts';
import { call } from '../../lib/kube/errors.ts';
import { DEADLINE_MARGIN_MS } from '../../lib/steps/time-budget.ts';
import { createClusterPki } from '../../lib/twin/real/pki.ts';

let server: Server;
let dir: string;
let kubeconfig: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-silent-'));
  const pki = createClusterPki(path.join(dir, 'pki'));
  // Takes every request and answers none.
  server = createServer({ cert: pki.serving.cert, key: pki.serving.key }, () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  kubeconfig = path.join(dir, 'kubeconfig.yaml');
  const ca = Buffer.from(pki.caCert).toString('base64');
  await writeFile(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: silent, cluster: {server: "https://127.0.0.1:${port}", certificate-authority-data: ${ca}}}]`,
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: c, context: {cluster: silent, user: u}}]',
      'current-context: c',
    ].join('\n'),
  );
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

it('ends a request the API server never answers as ClusterUnreachable, after the request timeout', async () => {
  const clients = clientsFromKubeconfigFile(kubeconfig, undefined, { requestTimeoutMs: 300 });
  const started = Date.now();
  const error = await call('read the version', () => clients.version.getCode()).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ClusterUnreachableError);
  expect((error as Error).message).toBe(
    'read the version: the API server did not answer (no answer in time)',
  );
  expect(Date.now() - started).toBeLessThan(5_000);
});

it('fits twice in the margin a step keeps after its deadline (the look in flight, then the cleanup)', () => {
  expect(2 * REQUEST_TIMEOUT_MS).toBeLessThanOrEqual(DEADLINE_MARGIN_MS);
});
