/**
 * The drift functions as Lambda runs them (checkDriftHandler, fleetStepHandler, remediateDriftHandler): the
 * registry and runs on a real DynamoDB (dynalite), the
 * cluster a twin reached through its kubeconfig from a (mocked) Secrets Manager, events put on a (mocked)
 * EventBridge bus.
 */
import { readFile } from 'node:fs/promises';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { checkDriftHandler } from '../../lib/aws/drift-step-handler.ts';
import type { DriftDeps } from '../../lib/aws/fleet-context.ts';
import { fleetStepHandler } from '../../lib/aws/fleet-step-handler.ts';
import { remediateDriftHandler } from '../../lib/aws/remediate-step-handler.ts';
import { remediationRequestId } from '../../lib/drift/events.ts';
import {
  ListClustersEventSchema,
  listClusters,
  PublishDriftEventSchema,
  publishDrift,
} from '../../lib/drift/steps.ts';
import type { DriftSummary } from '../../lib/drift/summary.ts';
import { DynamoRunStore } from '../../lib/store/dynamo-store.ts';
import { type ClusterRecordInput, DynamoClusterRegistry } from '../../lib/store/registry.ts';
import { type Dynalite, startDynalite } from '../store/dynalite.ts';
import { FIXTURES, fixtureSpec, startTestTwin, type TestTwin } from '../twin/running-twin.ts';
import { capturedLogger } from './captured-logger.ts';
import { LAMBDA_CONTEXT } from './lambda-context.ts';

const secrets = mockClient(SecretsManagerClient);
const events = mockClient(EventBridgeClient);
const ARN = 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:ccm-migrate/clusters/mini-AbCdEf';
const BUS = 'test-ccm-migrate';
let twin: TestTwin;
let db: Dynalite;
let registry: DynamoClusterRegistry;
let runs: DynamoRunStore;
let kubeconfig: string;
let logs: string[];

const record = (over: Partial<ClusterRecordInput> = {}): ClusterRecordInput => ({
  clusterId: 'mini',
  provider: 'aws',
  distribution: 'kubeadm',
  kubeconfigSecretArn: ARN,
  desiredMode: 'external',
  policy: { maxUnavailable: 2, autoRollback: true },
  ...over,
});
const deps = (): DriftDeps => ({
  registry: () => registry,
  events: new EventBridgeClient({ region: 'eu-west-1' }),
  env: { EVENT_BUS_NAME: BUS },
  logger: capturedLogger(logs),
});
const HANDLERS = {
  'check-drift': () => checkDriftHandler(deps()),
  'list-clusters': () => fleetStepHandler('list-clusters', ListClustersEventSchema, listClusters, deps()),
  'publish-drift': () => fleetStepHandler('publish-drift', PublishDriftEventSchema, publishDrift, deps()),
  'remediate-drift': () => remediateDriftHandler({ ...deps(), store: () => runs }),
};
const handler = (id: keyof typeof HANDLERS) => HANDLERS[id]();
const ctx = LAMBDA_CONTEXT;

beforeAll(async () => {
  [twin, db] = await Promise.all([startTestTwin(await fixtureSpec(FIXTURES.awsMini)), startDynalite()]);
  registry = new DynamoClusterRegistry({ client: db.client(), tableName: await db.table() });
  runs = new DynamoRunStore({ client: db.client(), tableName: await db.table() });
  kubeconfig = await readFile(twin.twin.kubeconfigPath, 'utf8');
});
afterAll(async () => {
  await Promise.all([twin?.stop(), db?.close()]);
});
beforeEach(() => {
  logs = [];
  secrets.reset();
  events.reset();
  secrets.on(GetSecretValueCommand).resolves({ SecretString: kubeconfig });
  events.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: '1' }] });
});

it('checks the cluster through the secret its registry record names, and counts it drifted', async () => {
  await registry.put(record());
  const summary = (await handler('check-drift')(
    { clusterId: 'mini', runId: 'd32c5kddcf5bb8c3', depth: 'shallow' },
    ctx,
  )) as DriftSummary;
  expect(secrets.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.SecretId)).toEqual([ARN]);
  // The twin runs the in-tree provider; the registry expects external.
  expect(summary).toMatchObject({ clusterId: 'mini', status: 'drifted', expect: 'external' });
  expect(summary.findings.length).toBeGreaterThan(0);
  const metric = logs.map((l) => JSON.parse(l)).find((l) => l._aws);
  expect(metric).toMatchObject({ ClustersDrifted: 1 });
  expect(metric._aws.CloudWatchMetrics[0].Dimensions).toEqual([[]]);
  expect(JSON.stringify([summary, logs])).not.toContain(kubeconfig.trim());
});

it('finds the in-tree cluster clean when that is its desired mode, and counts nothing', async () => {
  await registry.put(record({ desiredMode: 'in-tree' }));
  const summary = (await handler('check-drift')(
    { clusterId: 'mini', runId: 'run-2', depth: 'shallow' },
    ctx,
  )) as DriftSummary;
  expect(summary.status).toBe('clean');
  expect(logs.some((l) => l.includes('ClustersDrifted'))).toBe(false);
});

it('reports unknown, reading no secret, when the record names a secret outside the prefix', async () => {
  await registry.put(
    record({ kubeconfigSecretArn: 'arn:aws:secretsmanager:eu-west-1:111111111111:secret:other/mini-AbCdEf' }),
  );
  const summary = (await handler('check-drift')(
    { clusterId: 'mini', runId: 'run-3', depth: 'shallow' },
    ctx,
  )) as DriftSummary;
  expect(summary.status).toBe('unknown');
  expect(summary.error).toMatch(/^InvalidInput: .*only secrets under ccm-migrate\/clusters\//);
  expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(0);
});

it('lists the registered clusters by id', async () => {
  await registry.put(record());
  await registry.put(record({ clusterId: 'other' }));
  expect(await handler('list-clusters')({}, ctx)).toEqual(['mini', 'other']);
  await registry.remove('other');
});

const drifted: DriftSummary = {
  clusterId: 'mini',
  status: 'drifted',
  counts: { critical: 1, warning: 0, info: 0 },
  findings: ['critical kubelet worker-1: expected external; seen aws'],
};
const entries = () => events.commandCalls(PutEventsCommand).flatMap((c) => c.args[0].input.Entries ?? []);

it('publishes DriftDetected on the bus, and no remediation without the policy', async () => {
  await registry.put(record());
  const out = await handler('publish-drift')({ runId: 'run-4', summary: drifted }, ctx);
  expect(out).toEqual({ published: ['DriftDetected'] });
  expect(entries()).toEqual([
    {
      EventBusName: BUS,
      Source: 'ccm-migrate',
      DetailType: 'DriftDetected',
      Detail: JSON.stringify({ clusterId: 'mini', findings: drifted.findings }),
    },
  ]);
});

it('also requests a run back to the desired mode when the policy says autoRemediate', async () => {
  await registry.put(record({ policy: { maxUnavailable: 2, autoRollback: true, autoRemediate: true } }));
  const out = await handler('publish-drift')({ runId: 'run-5', summary: drifted }, ctx);
  expect(out).toEqual({ published: ['DriftDetected', 'MigrationRequested'] });
  const [detected, requested] = entries();
  expect(detected?.DetailType).toBe('DriftDetected');
  expect(requested).toMatchObject({
    EventBusName: BUS,
    Source: 'ccm-migrate',
    DetailType: 'MigrationRequested',
  });
  expect(JSON.parse(requested?.Detail ?? '{}')).toEqual({
    clusterId: 'mini',
    kind: 'upgrade',
    requestId: remediationRequestId('run-5', 'mini'),
    maxUnavailable: 2,
    options: {},
  });
});

it('fails the publish when EventBridge refuses an entry, so that the workflow notes it', async () => {
  await registry.put(record());
  events.on(PutEventsCommand).resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'InternalFailure' }] });
  await expect(handler('publish-drift')({ runId: 'run-6', summary: drifted }, ctx)).rejects.toThrow(
    /EventBridge refused DriftDetected: InternalFailure/,
  );
});

it('requests no upgrade for kubelets the workflow flips back itself', async () => {
  await registry.put(record({ policy: { maxUnavailable: 2, autoRollback: true, autoRemediate: true } }));
  const out = await handler('publish-drift')(
    { runId: 'run-7', summary: { ...drifted, remediation: 'kubelets' } },
    ctx,
  );
  expect(out).toEqual({ published: ['DriftDetected'] });
});

it('remediates kubelets only for a record that asks, through its secret, recording the run in the table', async () => {
  await registry.put(record());
  await expect(handler('remediate-drift')({ clusterId: 'mini', runId: 'run-8' }, ctx)).rejects.toThrow(
    /record does not ask for its kubelets to be remediated/,
  );
  expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(0);

  // The twin's control plane is in-tree: the remediation reaches it, refuses, and says so in its run.
  await registry.put(record({ policy: { maxUnavailable: 2, autoRollback: true, autoRemediate: true } }));
  await expect(handler('remediate-drift')({ clusterId: 'mini', runId: 'run-8' }, ctx)).rejects.toThrow(
    /the control plane is in-tree/,
  );
  expect(secrets.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.SecretId)).toEqual([ARN]);
  expect(await runs.get('mini', remediationRequestId('run-8', 'mini'))).toMatchObject({
    kind: 'remediate',
    status: 'failed',
    error: { name: 'PreflightFailed' },
  });
});
