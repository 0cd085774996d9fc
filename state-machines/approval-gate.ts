/**
 * The approval gate both migrations may stand behind: after preflight found work to do and before the
 * first change, a run whose input has `options.requireApproval` publishes a request (lib/aws/approval.ts) to
 * the approval topic and waits for SendTaskSuccess or SendTaskFailure on its token (`ccm-migrate approve`).
 * No heartbeat: nobody works on an approval, the one bound is the timeout (its expiry is States.Timeout).
 * A rejection or no answer ends the run through the failure ending, never a rollback: nothing changed yet.
 */
import {
  Duration,
  aws_stepfunctions as sfn,
  aws_sns as sns,
  aws_stepfunctions_tasks as tasks,
} from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { APPROVAL_REQUESTED } from '../lib/aws/approval.ts';
import type { MigrationKind } from '../lib/local/migration.ts';
import { type Catchable, IDS, isTrue } from './shared.ts';

/** The gate's states, of the same names in both definitions (the local gate handler goes by name). */
export const APPROVAL_STATES = {
  needsApproval: 'Does this run need approval?',
  approval: 'Wait for approval',
} as const;

/** How long the approval gate waits for an answer by default. */
export const APPROVAL_TIMEOUT = Duration.hours(24);

/** Where a definition rendered to run locally publishes: nowhere, local runs answer the gate in-process. */
const LOCAL_APPROVAL_TOPIC_ARN = 'arn:aws:sns:local:000000000000:ccm-migrate-approvals';

export interface ApprovalGateOptions {
  /** The topic the approval gate publishes its request to; @default a placeholder (local runs). */
  readonly approvalTopic?: sns.ITopic;
  /** How long the gate waits for an answer; @default APPROVAL_TIMEOUT */
  readonly approvalTimeout?: Duration;
}

/**
 * The Choice that sends a run asking for approval through the gate to `next`, and any other run straight
 * there. The gate's failures go to `onError`.
 */
export function approvalChoice(
  scope: Construct,
  opts: ApprovalGateOptions & {
    readonly migration: MigrationKind;
    readonly onError: <T extends Catchable>(state: T) => T;
    readonly next: sfn.IChainable;
  },
): sfn.Choice {
  const S = APPROVAL_STATES;
  const approval = opts.onError(
    approvalGate(scope, {
      migration: opts.migration,
      topic: opts.approvalTopic ?? sns.Topic.fromTopicArn(scope, 'ApprovalTopic', LOCAL_APPROVAL_TOPIC_ARN),
      timeout: opts.approvalTimeout ?? APPROVAL_TIMEOUT,
    }),
  );
  return new sfn.Choice(scope, S.needsApproval, { stateName: S.needsApproval })
    .when(isTrue('$.options.requireApproval'), approval.next(opts.next))
    .otherwise(opts.next);
}

/** Publish the request, the command lines that answer it included, and wait for its token. */
function approvalGate(
  scope: Construct,
  opts: { migration: MigrationKind; topic: sns.ITopic; timeout: Duration },
): tasks.SnsPublish {
  const S = APPROVAL_STATES;
  const downgrade = opts.migration === 'downgrade' ? ' --downgrade' : '';
  const command = `ccm-migrate approve --aws${downgrade} --cluster-id {} --run-id {}`;
  return new tasks.SnsPublish(scope, S.approval, {
    stateName: S.approval,
    topic: opts.topic,
    integrationPattern: sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
    subject: `ccm-migrate: a${opts.migration === 'upgrade' ? 'n' : ''} ${opts.migration} waits for approval`,
    messageAttributes: { kind: { value: APPROVAL_REQUESTED } },
    message: sfn.TaskInput.fromObject({
      kind: APPROVAL_REQUESTED,
      migration: opts.migration,
      ...IDS,
      'provider.$': '$.preflight.provider',
      'kubernetesVersion.$': '$.preflight.kubernetesVersion',
      'nodes.$': 'States.ArrayLength($.preflight.kubeletOrder)',
      taskToken: sfn.JsonPath.taskToken,
      'approve.$': `States.Format('${command}', $.clusterId, $.runId)`,
      'reject.$': `States.Format('${command} --reject --reason <why>', $.clusterId, $.runId)`,
    }),
    resultPath: sfn.JsonPath.DISCARD,
    taskTimeout: sfn.Timeout.duration(opts.timeout),
  });
}
