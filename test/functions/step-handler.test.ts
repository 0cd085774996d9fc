/**
 * A real step function end to end: the preflight handler against the twin, its kubeconfig read from a
 * (mocked) Secrets Manager, its run recorded in a store; then the recording function and a refused event.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { clusterStepHandler } from '../../lib/aws/step-handlers.ts';
import { storeStepHandler } from '../../lib/aws/store-step-handler.ts';
import { recordFailure } from '../../lib/steps/finalize.ts';
import { STEPS } from '../../lib/steps/index.ts';
import { FailureEventSchema } from '../../lib/steps/schemas.ts';
import { DEADLINE_MARGIN_MS } from '../../lib/steps/time-budget.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { LocalClusterRegistry } from '../../lib/store/registry.ts';
import { FIXTURES, fixtureSpec, startTestTwin, type TestTwin } from '../twin/running-twin.ts';
import { capturedLogger } from './captured-logger.ts';
import { LAMBDA_CONTEXT } from './lambda-context.ts';

const secrets = mockClient(SecretsManagerClient);
let twin: TestTwin;
let dir: string;
let store: LocalRunStore;
let registry: LocalClusterRegistry;
let kubeconfig: string;
const logs: string[] = [];
const deps = () => ({
  store: () => store,
  registry: () => registry,
  logger: capturedLogger(logs),
});

beforeAll(async () => {
  twin = await startTestTwin(await fixtureSpec(FIXTURES.awsMini));
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-fn-'));
  store = new LocalRunStore(dir);
  registry = new LocalClusterRegistry(dir);
  kubeconfig = await readFile(twin.twin.kubeconfigPath, 'utf8');
  secrets.on(GetSecretValueCommand).resolves({ SecretString: kubeconfig });
});
afterAll(async () => {
  await twin?.stop();
  await rm(dir, { recursive: true, force: true });
});

const ctx = LAMBDA_CONTEXT;
/** Powertools' own fields of a log line: level, message, time, service and the Lambda context. */
const POWERTOOLS_FIELDS = [
  'level',
  'message',
  'timestamp',
  'service',
  'cold_start',
  'function_name',
  'function_request_id',
  'xray_trace_id',
];

it('runs preflight on the cluster of the secret named after the cluster id, and records the run', async () => {
  const handler = clusterStepHandler('preflight', STEPS.preflight, deps());
  const result = (await handler({ clusterId: 'mini', runId: 'up-fn-1', options: {} }, ctx)) as {
    alreadyExternal: boolean;
    provider: string;
    kubeletOrder: string[];
  };
  expect(secrets.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.SecretId)).toEqual([
    'ccm-migrate/clusters/mini',
  ]);
  expect(result.provider).toBe('aws');
  expect(result.alreadyExternal).toBe(false);
  expect(result.kubeletOrder.length).toBeGreaterThan(0);
  expect((await store.current('mini'))?.runId).toBe('up-fn-1');
  // The result is the small summary the state payload carries: no credential of the kubeconfig in it.
  expect(JSON.stringify(result)).not.toContain('token');
});

it('reads the secret the registry record names when the cluster is registered', async () => {
  const arn = 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:ccm-migrate/clusters/team-a/mini2-AbCdEf';
  await registry.put({
    clusterId: 'mini2',
    provider: 'aws',
    distribution: 'kubeadm',
    kubeconfigSecretArn: arn,
    desiredMode: 'external',
    policy: { maxUnavailable: 1, autoRollback: true },
  });
  secrets.resetHistory();
  await clusterStepHandler(
    'preflight',
    STEPS.preflight,
    deps(),
  )({ clusterId: 'mini2', runId: 'up-fn-3', options: {} }, ctx);
  expect(secrets.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.SecretId)).toEqual([arn]);
});

it('ends a step with DeadlineReached, not killed, when Lambda leaves it no more than the margin', async () => {
  const handler = clusterStepHandler('preflight', STEPS.preflight, deps());
  const late = { getRemainingTimeInMillis: () => DEADLINE_MARGIN_MS } as never;
  // Every node Ready at the first look; the agent's Job, though, takes longer than no time at all.
  await expect(handler({ clusterId: 'late', runId: 'up-fn-4', options: {} }, late)).rejects.toMatchObject({
    name: 'DeadlineReached',
  });
});

it('records the failure without cluster access, releasing the cluster', async () => {
  const handler = storeStepHandler('record-failure', FailureEventSchema, recordFailure, deps());
  await handler({ clusterId: 'mini', runId: 'up-fn-1', error: { Error: 'AgentFailed', Cause: 'boom' } }, ctx);
  expect((await store.get('mini', 'up-fn-1'))?.status).toBe('failed');
  expect(await store.current('mini')).toBeUndefined();
});

it('refuses a bad event with the error name the state machine matches, and logs ids only', async () => {
  const handler = clusterStepHandler('flip-kubelet', STEPS['flip-kubelet'], deps());
  await expect(handler({ clusterId: 'mini', runId: 'up-fn-1' }, ctx)).rejects.toMatchObject({
    name: 'InvalidInput',
  });
  await expect(handler({ clusterId: 'Not A Name', runId: 'x' }, ctx)).rejects.toMatchObject({
    name: 'InvalidInput',
  });
  const secretText = kubeconfig.match(/(token|client-key-data|password): *(\S+)/)?.[2];
  for (const line of logs) {
    const entry = JSON.parse(line) as Record<string, unknown>;
    expect(
      Object.keys(entry).every((k) =>
        [...POWERTOOLS_FIELDS, 'step', 'clusterId', 'runId', 'node', 'errorName', 'durationMs'].includes(k),
      ),
    ).toBe(true);
    if (secretText) expect(line).not.toContain(secretText);
  }
  expect(logs.some((l) => l.includes('"errorName":"InvalidInput"'))).toBe(true);
});

it('names a missing secret as InvalidInput with the secret id and nothing of its value', async () => {
  secrets
    .on(GetSecretValueCommand)
    .rejects(Object.assign(new Error('nope'), { name: 'ResourceNotFoundException' }));
  const handler = clusterStepHandler('verify', STEPS.verify, deps());
  await expect(handler({ clusterId: 'gone', runId: 'up-fn-2' }, ctx)).rejects.toMatchObject({
    name: 'InvalidInput',
    message: expect.stringContaining('ccm-migrate/clusters/gone'),
  });
});
