/**
 * The AWS path tells a pinned endpoint as the local one does: the stack's kubeconfig Secret naming one
 * control-plane node's address makes preflight put that node last and say why.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { clusterStepHandler } from '../../lib/aws/step-handlers.ts';
import { STEPS } from '../../lib/steps/index.ts';
import type { PreflightResult } from '../../lib/steps/schemas.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { LocalClusterRegistry } from '../../lib/store/registry.ts';
import { FIXTURES, fixtureSpec, startTestTwin, type TestTwin } from '../twin/running-twin.ts';
import { capturedLogger } from './captured-logger.ts';
import { LAMBDA_CONTEXT } from './lambda-context.ts';

const secrets = mockClient(SecretsManagerClient);
let twin: TestTwin;
let dir: string;
const logs: string[] = [];

beforeAll(async () => {
  twin = await startTestTwin(await fixtureSpec(FIXTURES.awsHaMini));
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-fn-'));
});
afterAll(async () => {
  await twin?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function preflight(kubeconfig: string, runId: string): Promise<PreflightResult> {
  secrets.on(GetSecretValueCommand).resolves({ SecretString: kubeconfig });
  const handler = clusterStepHandler('preflight', STEPS.preflight, {
    store: () => new LocalRunStore(path.join(dir, runId)),
    registry: () => new LocalClusterRegistry(path.join(dir, runId)),
    logger: capturedLogger(logs),
  });
  return (await handler({ clusterId: 'ha', runId, options: {} }, LAMBDA_CONTEXT)) as PreflightResult;
}

it('puts the node the Secret’s server names last, and says so; a server no node carries changes nothing', async () => {
  const pinned = await preflight(
    await readFile(twin.twin.nodeKubeconfigPaths['cp-1'] as string, 'utf8'),
    'up-fn-1',
  );
  expect(pinned.controlPlaneNodes).toEqual(['cp-2', 'cp-3', 'cp-1']);
  expect(pinned.kubeletOrder.slice(0, 3)).toEqual(['cp-2', 'cp-3', 'cp-1']);
  expect(logs.join('\n')).toContain('is control-plane node cp-1 (its InternalIP), not a load balancer');

  logs.length = 0;
  const plain = await preflight(await readFile(twin.twin.kubeconfigPath, 'utf8'), 'up-fn-2');
  expect(plain.controlPlaneNodes).toEqual(['cp-1', 'cp-2', 'cp-3']);
  expect(logs.join('\n')).not.toContain('not a load balancer');
});
