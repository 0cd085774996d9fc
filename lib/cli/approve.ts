/**
 * `ccm-migrate approve --aws`: answer the approval gate of a cluster's upgrade (or downgrade) on the deployed
 * stack. The task token Step Functions waits on is read from the execution's history (the gate's TaskScheduled event
 * holds the request it published, lib/aws/approval.ts), so the operator names the cluster (and the run)
 * instead of copying a token. The token is passed on to SendTaskSuccess/SendTaskFailure and printed nowhere.
 */
import {
  type HistoryEvent,
  SendTaskFailureCommand,
  SendTaskSuccessCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import { APPROVED, type ApprovalRequest, ApprovalTaskParametersSchema } from '../aws/approval.ts';
import type { StackTarget } from '../aws/stack-outputs.ts';
import { executionArnOf, executionNameFor } from '../aws/starter.ts';
import { ERROR_NAMES } from '../errors.ts';
import type { MigrationKind } from '../local/migration.ts';
import { parseInput } from '../store/run-record.ts';
import { executionsOf, historyNewestFirst, machineOf } from './aws.ts';
import { CliError, EXIT } from './exit-codes.ts';

export interface AwsApproveCommand {
  readonly clusterId: string;
  /** Whose gate: an upgrade's or a downgrade's; @default upgrade */
  readonly kind?: MigrationKind;
  /** @default the cluster's running run of that kind */
  readonly runId?: string;
  readonly sfn: SFNClient;
  readonly target: StackTarget;
  /** Present: reject, with the operator's reason as the run's cause. */
  readonly reject?: { readonly reason: string };
  readonly out?: NodeJS.WritableStream;
}

export interface ApprovalAnswer {
  readonly answer: 'approved' | 'rejected';
  readonly runId: string;
  readonly executionArn: string;
}

type GateState =
  | { readonly waiting: true; readonly request: ApprovalRequest }
  | { readonly waiting: false; readonly why: string };

/** A gate Task's event details: its resource is the SNS publish that waits for a token. */
function isGate(details: { resourceType?: string; resource?: string } | undefined): boolean {
  return details?.resourceType === 'sns' && details.resource === 'publish.waitForTaskToken';
}

/** The events that end the gate's Task: after one of them its token answers nothing. */
const GATE_ENDED = [
  'taskSucceededEventDetails',
  'taskFailedEventDetails',
  'taskTimedOutEventDetails',
  'taskStartFailedEventDetails',
  'taskSubmitFailedEventDetails',
] as const satisfies readonly (keyof HistoryEvent)[];

/** Whether the execution waits at its approval gate now, read from its history newest first. */
async function gateState(sfn: SFNClient, executionArn: string): Promise<GateState> {
  for await (const e of historyNewestFirst(sfn, executionArn)) {
    if (/^Execution(Succeeded|Failed|Aborted|TimedOut)$/.test(e.type ?? '')) {
      return { waiting: false, why: `it has ended (${e.type})` };
    }
    if (GATE_ENDED.some((key) => isGate(e[key]))) {
      return { waiting: false, why: 'its approval gate was answered or has timed out already' };
    }
    if (e.type === 'TaskScheduled' && isGate(e.taskScheduledEventDetails)) {
      const parameters = e.taskScheduledEventDetails?.parameters;
      const { Message } = parseInput(
        ApprovalTaskParametersSchema,
        parameters,
        'approval request in the history',
      );
      return { waiting: true, request: Message };
    }
  }
  return {
    waiting: false,
    why: 'it has not reached an approval gate (still in preflight, or it was not started with --require-approval)',
  };
}

/** The execution to answer: the one of --run-id, or the cluster's only running run of its kind. */
async function executionToAnswer(
  cmd: AwsApproveCommand,
  kind: MigrationKind,
  stateMachineArn: string,
): Promise<{ runId: string; executionArn: string }> {
  if (cmd.runId) {
    return {
      runId: cmd.runId,
      executionArn: executionArnOf(stateMachineArn, executionNameFor(cmd.clusterId, cmd.runId)),
    };
  }
  const running = await executionsOf(cmd.sfn, stateMachineArn, kind, cmd.clusterId, 'RUNNING');
  const [only] = running;
  if (!only)
    throw new CliError(`no ${kind} of cluster ${cmd.clusterId} is running: nothing to answer`, EXIT.badInput);
  if (running.length > 1) {
    throw new CliError(
      `cluster ${cmd.clusterId} has ${running.length} running ${kind}s (${running.map((e) => e.runId).join(', ')}): pass --run-id`,
      EXIT.badInput,
    );
  }
  return only;
}

/** Step Functions' answers to a token that nothing waits on any more. */
const STALE_TOKEN = new Set(['TaskTimedOut', 'TaskDoesNotExist', 'InvalidToken']);

export async function awsApproveCommand(cmd: AwsApproveCommand): Promise<ApprovalAnswer> {
  const out = cmd.out ?? process.stdout;
  const kind = cmd.kind ?? 'upgrade';
  const { runId, executionArn } = await executionToAnswer(cmd, kind, machineOf(cmd.target, kind));
  const gate = await gateState(cmd.sfn, executionArn);
  if (!gate.waiting) {
    throw new CliError(
      `${kind} run ${runId} of cluster ${cmd.clusterId} waits for no approval: ${gate.why}`,
      EXIT.badInput,
    );
  }
  const { taskToken, provider, kubernetesVersion, nodes } = gate.request;
  try {
    if (cmd.reject) {
      await cmd.sfn.send(
        new SendTaskFailureCommand({
          taskToken,
          error: ERROR_NAMES.approvalRejected,
          cause: cmd.reject.reason,
        }),
      );
    } else {
      await cmd.sfn.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(APPROVED) }));
    }
  } catch (err) {
    const name = (err as { name?: string }).name ?? '';
    if (!STALE_TOKEN.has(name)) throw err;
    throw new CliError(
      `${kind} run ${runId} of cluster ${cmd.clusterId} no longer waits for approval (${name}): nothing was answered`,
      EXIT.badInput,
    );
  }
  const answer = cmd.reject ? 'rejected' : 'approved';
  out.write(
    `${answer} ${kind} run ${runId} of cluster ${cmd.clusterId} (${provider}, Kubernetes ${kubernetesVersion}, ${nodes} nodes)\n` +
      (cmd.reject
        ? '  it ends failed before any change to the cluster\n'
        : `  it goes on: follow it with ccm-migrate ${kind} --aws --cluster-id ${cmd.clusterId} (or status --aws)\n`),
  );
  return { answer, runId, executionArn };
}
