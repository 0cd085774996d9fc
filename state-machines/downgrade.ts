/**
 * The downgrade: external cloud-controller-manager → the in-tree provider again, for one cluster whose
 * upgrade ccm-migrate ran (seed: openstack-cloud-controller-manager's "Upgrade / Downgrade Strategy").
 * It restores the node files that upgrade changed from the agent's backups (the original bytes), in the
 * order of lib/steps/restore.ts, removes what the upgrade applied, and verifies the in-tree controllers.
 * On a replicated control plane its preflight chooses leader migration (as the upgrade's does), and the
 * control plane goes back under the migration lease: upstream's phases in reverse (ADR 0004).
 * With `options.requireApproval` it waits after preflight, before its first change, for an operator's
 * answer, as the upgrade does (state-machines/approval-gate.ts).
 *
 * JSONPath only (HOUSE-STYLE 7): the local engine runs this same definition.
 */
import { Duration, aws_stepfunctions as sfn } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { APPROVAL_STATES, type ApprovalGateOptions, approvalChoice } from './approval-gate.ts';
import { failureEnding, IDS, restoreSequence } from './shared.ts';
import type { StepTaskFactory } from './steps.ts';

export const DOWNGRADE_STATES = {
  preflight: 'Check the cluster',
  nothingToDo: 'Is it already in-tree?',
  ...APPROVAL_STATES,
  kubelets: 'Kubelets back in-tree',
  restoreKubelet: 'Restore a kubelet',
  stopCcm: 'Stop the CCM',
  controlPlane: 'Control plane back in-tree, one node at a time',
  restoreNode: 'Restore a control-plane node',
  removeCcm: 'Remove the CCM',
  useLeaderMigration: 'Hand back by leader migration?',
  ccmMigrating: 'Run the CCM under leader migration',
  handBackFallBack: 'The CCM did not start under leader migration: the plain way back',
  controlPlaneMigrating: 'Control plane back in-tree under leader migration, one node at a time',
  restoreNodeMigrating: 'Restore a control-plane node under leader migration',
  stopCcmMigrating: 'Stop the CCM, the migration lease passes back',
  migrationOff: 'Leader migration off, one node at a time',
  migrationOffNode: 'Turn leader migration off on a node',
  verify: 'Verify the in-tree provider',
  finalize: 'Record the result',
  recordFailure: 'Record the failure',
  succeeded: 'Back in-tree',
  failed: 'Downgrade failed',
} as const;

export function downgradeDefinition(
  scope: Construct,
  stepTask: StepTaskFactory,
  opts: ApprovalGateOptions = {},
): sfn.DefinitionBody {
  const S = DOWNGRADE_STATES;
  const catchAll = failureEnding(scope, stepTask, {
    recordName: S.recordFailure,
    failName: S.failed,
    errorPath: '$.error',
  }).catchInto;

  const preflight = catchAll(
    stepTask(scope, {
      stateName: S.preflight,
      step: 'downgrade-preflight',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'options.$': '$.options' }),
      resultPath: '$.preflight',
    }),
  );
  const restore = restoreSequence(scope, {
    names: S,
    stepTask,
    sourceRunIdPath: '$.preflight.sourceRunId',
    kubeletOrderPath: '$.preflight.kubeletOrder',
    controlPlanePath: '$.preflight.controlPlaneNodes',
    onError: catchAll,
    handBack: {
      decisionPath: '$.preflight.leaderMigration',
      names: {
        useLeaderMigration: S.useLeaderMigration,
        ccmMigrating: S.ccmMigrating,
        fallBack: S.handBackFallBack,
        controlPlane: S.controlPlaneMigrating,
        restoreNode: S.restoreNodeMigrating,
        stopCcm: S.stopCcmMigrating,
        migrationOff: S.migrationOff,
        migrationOffNode: S.migrationOffNode,
      },
    },
  });
  const verify = catchAll(
    stepTask(scope, {
      stateName: S.verify,
      step: 'verify-in-tree',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'sourceRunId.$': '$.preflight.sourceRunId' }),
      resultPath: '$.verification',
    }),
  );
  const finalize = catchAll(
    stepTask(scope, {
      stateName: S.finalize,
      step: 'finalize',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'verification.$': '$.verification' }),
      resultPath: '$.result',
    }),
  );
  restore.end.next(verify);
  verify.next(finalize).next(new sfn.Succeed(scope, S.succeeded, { stateName: S.succeeded }));
  const chain = preflight.next(
    new sfn.Choice(scope, S.nothingToDo, { stateName: S.nothingToDo })
      .when(sfn.Condition.booleanEquals('$.preflight.alreadyInTree', true), verify)
      .otherwise(
        approvalChoice(scope, { ...opts, migration: 'downgrade', onError: catchAll, next: restore.start }),
      ),
  );
  return sfn.DefinitionBody.fromChainable(chain);
}

/** The whole run's limit, as for the upgrade. */
export const DOWNGRADE_TIMEOUT = Duration.hours(12);
