/**
 * MigrationRequested → StartExecution. EventBridge delivers at least once and callers repeat themselves, so
 * the run id and the execution name are functions of (cluster, request): the same request again finds its
 * execution (ExecutionAlreadyExists) and starts nothing new. The execution's input holds ids and options only.
 * A stack that requires approval of upgrades (or of downgrades) makes every such run it starts wait for one,
 * whatever the request says.
 */
import { createHash } from 'node:crypto';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type * as z from 'zod';
import { MigrationRequested, MigrationRequestedDetail } from '../events.ts';
import { type UpgradeInput, UpgradeInputSchema } from '../steps/schemas.ts';
import { parseInput } from '../store/run-record.ts';
import { ENV, envVar } from './env.ts';
import { eventsClient, publish } from './publish.ts';

/** `up-<16 hex>` / `down-<16 hex>`: a valid run id (a DNS label), one per (cluster, request). */
export function runIdFor(detail: Pick<MigrationRequestedDetail, 'clusterId' | 'kind' | 'requestId'>): string {
  const hash = createHash('sha256').update(`${detail.clusterId}/${detail.requestId}`).digest('hex');
  return `${detail.kind === 'upgrade' ? 'up' : 'down'}-${hash.slice(0, 16)}`;
}

/** The run id first (unique), then as much of the cluster id as fits Step Functions' 80 characters. */
export function executionNameFor(clusterId: string, runId: string): string {
  return `${runId}-${clusterId}`.slice(0, 80).replace(/-+$/, '');
}

export interface StarterDeps {
  readonly sfn?: SFNClient;
  readonly events?: EventBridgeClient;
  readonly env?: NodeJS.ProcessEnv;
}

export interface StartOutcome {
  readonly executionArn: string;
  readonly runId: string;
  /** false: this request had started its execution already. */
  readonly started: boolean;
}

let defaultSfn: SFNClient | undefined;

/** One Step Functions client per container, made on first use. */
function sfnClient(): SFNClient {
  defaultSfn ??= new SFNClient({});
  return defaultSfn;
}

export async function startRequestedRun(event: unknown, deps: StarterDeps = {}): Promise<StartOutcome> {
  const env = deps.env ?? process.env;
  const { detail } = parseInput(MigrationRequested, event, 'MigrationRequested event');
  const stateMachineArn = envVar(
    detail.kind === 'upgrade' ? ENV.upgradeStateMachineArn : ENV.downgradeStateMachineArn,
    env,
  );
  const outcome = await startRun(deps.sfn ?? sfnClient(), stateMachineArn, withStackApproval(detail, env));
  if (outcome.started) {
    await announceStarted(deps.events ?? eventsClient(), envVar(ENV.eventBusName, env), detail, outcome);
  }
  return outcome;
}

/** The request with `requireApproval` set when the stack requires approval of its kind of run. */
function withStackApproval(
  detail: MigrationRequestedDetail,
  env: NodeJS.ProcessEnv,
): MigrationRequestedDetail {
  const variable = detail.kind === 'upgrade' ? ENV.requireApproval : ENV.requireDowngradeApproval;
  if (env[variable] !== 'true') return detail;
  return { ...detail, options: { ...detail.options, requireApproval: true } };
}

/**
 * StartExecution of one request (the starter's and the CLI's way): the execution named after the request,
 * its input ids and options only; ExecutionAlreadyExists means this request started it already.
 */
export async function startRun(
  sfn: SFNClient,
  stateMachineArn: string,
  request: z.input<typeof MigrationRequestedDetail>,
): Promise<StartOutcome> {
  const detail = MigrationRequestedDetail.parse(request);
  const runId = runIdFor(detail);
  const name = executionNameFor(detail.clusterId, runId);
  const input: UpgradeInput = UpgradeInputSchema.parse({
    clusterId: detail.clusterId,
    runId,
    maxUnavailable: detail.maxUnavailable,
    options: detail.options,
  });
  try {
    const answer = await sfn.send(
      new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }),
    );
    return {
      executionArn: answer.executionArn ?? executionArnOf(stateMachineArn, name),
      runId,
      started: true,
    };
  } catch (err) {
    if ((err as { name?: string }).name !== 'ExecutionAlreadyExists') throw err;
    return { executionArn: executionArnOf(stateMachineArn, name), runId, started: false };
  }
}

/** MigrationStarted on the bus, for a run this request started. */
export function announceStarted(
  events: EventBridgeClient,
  busName: string,
  detail: Pick<MigrationRequestedDetail, 'clusterId' | 'kind' | 'requestId'>,
  outcome: StartOutcome,
): Promise<void> {
  return publish(events, busName, {
    source: 'ccm-migrate',
    'detail-type': 'MigrationStarted',
    detail: {
      clusterId: detail.clusterId,
      runId: outcome.runId,
      kind: detail.kind,
      requestId: detail.requestId,
      executionArn: outcome.executionArn,
    },
  });
}

/** arn:…:stateMachine:M → arn:…:execution:M:name */
export function executionArnOf(stateMachineArn: string, name: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
}
