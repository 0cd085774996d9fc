/**
 * The upgrade: in-tree cloud provider → external cloud-controller-manager, for one cluster.
 *
 * Order matters for "never two cloud controllers, never none while a node waits": the CCM is staged (all
 * its objects applied, its workload scaled to zero) before the control plane moves, and started only once
 * no kube-controller-manager runs the in-tree cloud loops any more. Kubelets flip last: until then new nodes
 * register with the in-tree kubelet and need no CCM, and afterwards the CCM is there to initialise them.
 * The CCM starts without its cloud-node-lifecycle controller (which deletes a NotReady Node whose lookup
 * says it does not exist) and gets it only after it initialised every node again: a CCM that cannot find an
 * instance fails the run instead of deleting the Node. Each node is initialised right after its own kubelet
 * flipped, in the flip's slot: not before (an external kubelet's node-IP annotation narrows the addresses
 * the CCM sets), and not after every flip, which would queue all nodes behind the CCM's node-sync workers
 * once the restarts are over instead of while they run.
 *
 * On a replicated control plane (preflight decides: more than one control-plane node, Kubernetes 1.24+) the
 * cloud controllers are handed over by controller manager leader migration instead (KEP-2436; kubernetes.io
 * "Migrate Replicated Control Plane To Use Cloud Controller Manager"; lib/steps/leader-migration.ts, ADR
 * 0004): every kube-controller-manager joins the migration lease (phase 1), the CCM starts beside them on
 * the same lease (phase 2), the control plane moves as without it (phase 3: kube-controller-managers
 * external and off the lease, the lease holder's cloud controllers pass to the CCM), and the CCM is
 * restarted without the flag (phase 4, in "Start the CCM").
 *
 * With `options.requireApproval` the run waits after preflight, before its first change, for an operator's
 * answer to the request it publishes (`ccm-migrate approve`, lib/aws/approval.ts). A rejection or no answer
 * in time ends it as a failure before any change: nothing to roll back.
 *
 * A failure after preflight rolls back what this run changed (the restore sequence, from this run's own
 * backups) and ends the execution as RolledBack; a failure of the rollback itself ends it as it stands.
 * Once the CCM ran Ready under leader migration (holding its own lease), the rollback hands the cloud controllers back the same way the
 * downgrade does (the CCM keeps them until every kube-controller-manager is in-tree again); before, or
 * without leader migration, it takes the plain way (the CCM stopped first).
 *
 * JSONPath only (HOUSE-STYLE 7): the local engine runs this same definition.
 */
import { Duration, aws_stepfunctions as sfn } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ERROR_NAMES } from '../lib/errors.ts';
import { APPROVAL_STATES, type ApprovalGateOptions, approvalChoice } from './approval-gate.ts';
import { type Catchable, failureEnding, forEachNode, IDS, isTrue, restoreSequence } from './shared.ts';
import type { StepId, StepTaskFactory } from './steps.ts';

export const UPGRADE_STATES = {
  preflight: 'Check the cluster',
  nothingToDo: 'Is it already external?',
  ...APPROVAL_STATES,
  stage: 'Stage the CCM',
  controlPlane: 'Move the control plane, one node at a time',
  moveNode: 'Move a control-plane node',
  useLeaderMigration: 'Hand over by leader migration?',
  enableMigration: 'Enable leader migration, one node at a time',
  enableMigrationNode: 'Enable leader migration on a node',
  startCcmMigrating: 'Start the CCM under leader migration',
  ccmRuns: 'Note that the CCM runs: a rollback can hand back',
  activate: 'Start the CCM',
  kubelets: 'Flip kubelets, control plane first, each node then initialised by the CCM',
  flipKubelet: 'Flip a kubelet',
  initialiseFlipped: 'Have the CCM initialise the flipped node',
  verifyNodes: 'Have the CCM initialise every node, in batches',
  verifyNode: 'Have the CCM initialise a node',
  completeCcm: 'Give the CCM its full controller set',
  verify: 'Verify the cluster',
  finalize: 'Record the result',
  recordFailure: 'Record the failure',
  succeeded: 'Migrated',
  failed: 'Migration failed',
  changedAnything: 'Did this run change anything?',
  rollbackKubelets: 'Roll back kubelets',
  rollbackKubelet: 'Roll back a kubelet',
  rollbackStopCcm: 'Roll back: stop the CCM',
  rollbackControlPlane: 'Roll back the control plane, one node at a time',
  rollbackNode: 'Roll back a control-plane node',
  rollbackRemoveCcm: 'Roll back: remove the CCM',
  rollbackByLeaderMigration: 'Roll back by leader migration?',
  rollbackCcmMigrating: 'Roll back: run the CCM under leader migration',
  rollbackFallBack: 'Roll back: the CCM did not start under leader migration, the plain way',
  rollbackControlPlaneMigrating: 'Roll back the control plane under leader migration, one node at a time',
  rollbackNodeMigrating: 'Roll back a control-plane node under leader migration',
  rollbackStopCcmMigrating: 'Roll back: stop the CCM, the migration lease passes back',
  rollbackMigrationOff: 'Roll back: leader migration off, one node at a time',
  rollbackMigrationOffNode: 'Roll back: turn leader migration off on a node',
  recordRollback: 'Record the rollback',
  rolledBack: 'Rolled back',
  recordRollbackFailure: 'Record the failed rollback',
  rollbackFailed: 'Rollback failed',
} as const;

/**
 * Where the run notes, once the CCM started under leader migration, that its rollback may hand the cloud
 * controllers back by leader migration (`{enabled, reason}`, as preflight's decision). Absent: the plain way.
 */
const HAND_BACK_PATH = '$.handBack';

/** The upgrade state machine's definition, with each step made into a Task by `stepTask`. */
const PRESTART_IN_BATCHES = {
  'order.$': '$.preflight.kubeletOrder',
  'lookahead.$': '$.maxUnavailable',
} as const;

export function upgradeDefinition(
  scope: Construct,
  stepTask: StepTaskFactory,
  opts: ApprovalGateOptions = {},
): sfn.DefinitionBody {
  const S = UPGRADE_STATES;
  const ids = sfn.TaskInput.fromObject(IDS);

  const failure = failureEnding(scope, stepTask, {
    recordName: S.recordFailure,
    failName: S.failed,
    errorPath: '$.error',
  });
  // The rollback: this run's changes undone from its own backups; the first error is kept for the record.
  const rollbackFailure = failureEnding(scope, stepTask, {
    recordName: S.recordRollbackFailure,
    failName: S.rollbackFailed,
    errorPath: '$.rollbackError',
  });
  const catchAll = failure.catchInto;
  const rollback = restoreSequence(scope, {
    names: {
      kubelets: S.rollbackKubelets,
      restoreKubelet: S.rollbackKubelet,
      stopCcm: S.rollbackStopCcm,
      controlPlane: S.rollbackControlPlane,
      restoreNode: S.rollbackNode,
      removeCcm: S.rollbackRemoveCcm,
    },
    stepTask,
    sourceRunIdPath: '$.runId',
    kubeletOrderPath: '$.preflight.kubeletOrder',
    controlPlanePath: '$.preflight.controlPlaneNodes',
    onError: rollbackFailure.catchInto,
    // Only a CCM known to run can take the cloud loops while the control plane goes back (ADR 0004).
    handBack: {
      decisionPath: HAND_BACK_PATH,
      names: {
        useLeaderMigration: S.rollbackByLeaderMigration,
        ccmMigrating: S.rollbackCcmMigrating,
        fallBack: S.rollbackFallBack,
        controlPlane: S.rollbackControlPlaneMigrating,
        restoreNode: S.rollbackNodeMigrating,
        stopCcm: S.rollbackStopCcmMigrating,
        migrationOff: S.rollbackMigrationOff,
        migrationOffNode: S.rollbackMigrationOffNode,
      },
    },
  });
  rollback.end
    .next(
      rollbackFailure.catchInto(
        stepTask(scope, {
          stateName: S.recordRollback,
          step: 'record-rollback',
          payload: sfn.TaskInput.fromObject({ ...IDS, 'error.$': '$.error' }),
          resultPath: sfn.JsonPath.DISCARD,
        }),
      ),
    )
    .next(
      new sfn.Fail(scope, S.rolledBack, {
        stateName: S.rolledBack,
        error: ERROR_NAMES.rolledBack,
        causePath: '$.error.Cause',
      }),
    );
  // A cluster that was external before the run had nothing changed by it: nothing to roll back.
  const changedAnything = new sfn.Choice(scope, S.changedAnything, { stateName: S.changedAnything })
    .when(sfn.Condition.booleanEquals('$.preflight.alreadyExternal', false), rollback.start)
    .otherwise(failure.record);
  const catchRollingBack = <T extends Catchable>(state: T): T =>
    state.addCatch(changedAnything, { errors: [sfn.Errors.ALL], resultPath: '$.error' }) as T;

  const preflight = catchAll(
    stepTask(scope, {
      stateName: S.preflight,
      step: 'preflight',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'options.$': '$.options' }),
      resultPath: '$.preflight',
    }),
  );
  const stage = catchRollingBack(
    stepTask(scope, {
      stateName: S.stage,
      step: 'stage-ccm',
      payload: ids,
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  const controlPlane = catchRollingBack(
    forEachNode(scope, {
      mapName: S.controlPlane,
      itemsPath: '$.preflight.controlPlaneNodes',
      taskName: S.moveNode,
      step: 'move-control-plane-node',
      stepTask,
      concurrency: { maxConcurrency: 1 },
      // Each move pre-starts the next node's agent (lib/steps/prestart.ts).
      fields: { 'order.$': '$.preflight.controlPlaneNodes' },
      constants: { lookahead: 1 },
    }),
  );
  const activate = catchRollingBack(
    stepTask(scope, {
      stateName: S.activate,
      step: 'activate-ccm',
      // The CCM's start pre-starts the first batch of kubelet flips (lib/steps/prestart.ts).
      payload: sfn.TaskInput.fromObject({ ...IDS, ...PRESTART_IN_BATCHES }),
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  // Leader migration phases 1 and 2, before the control plane moves (phase 3).
  const enableMigration = catchRollingBack(
    forEachNode(scope, {
      mapName: S.enableMigration,
      itemsPath: '$.preflight.controlPlaneNodes',
      taskName: S.enableMigrationNode,
      step: 'move-control-plane-node',
      stepTask,
      concurrency: { maxConcurrency: 1 },
      constants: { phase: 'enable-leader-migration' },
    }),
  );
  const startCcmMigrating = catchRollingBack(
    stepTask(scope, {
      stateName: S.startCcmMigrating,
      step: 'activate-ccm',
      payload: sfn.TaskInput.fromObject({ ...IDS, leaderMigration: true }),
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  // Set only on the leader migration path and only once the CCM ran Ready under leader migration: a rollback from
  // any later failure hands back to it; before (a CCM that never ran or did not start) it takes the plain way.
  const ccmRuns = new sfn.Pass(scope, S.ccmRuns, {
    stateName: S.ccmRuns,
    result: sfn.Result.fromObject({ enabled: true, reason: 'the CCM ran Ready under leader migration' }),
    resultPath: HAND_BACK_PATH,
  });
  /**
   * A step for every node, control-plane nodes first, maxUnavailable at a time; a flip pre-starts the agent
   * of the node that takes its slot next (lib/steps/prestart.ts).
   */
  const inBatches = (
    mapName: string,
    taskName: string,
    step: StepId,
    then?: { taskName: string; step: StepId },
  ): sfn.Map =>
    catchRollingBack(
      forEachNode(scope, {
        mapName,
        itemsPath: '$.preflight.kubeletOrder',
        taskName,
        step,
        stepTask,
        concurrency: { maxConcurrencyPath: '$.maxUnavailable' },
        ...(then ? { then, fields: PRESTART_IN_BATCHES } : {}),
      }),
    );
  // No Node deleted until the CCM has seen every node (lib/steps/verify-node.ts): it runs without its
  // node-lifecycle controller until each node was initialised by it again. The whole flip takes
  // ⌈nodes / maxUnavailable⌉ kubelet restarts (a kubelet restart stops no pod), each node's initialisation
  // overlapping the other slots' restarts.
  const kubelets = inBatches(S.kubelets, S.flipKubelet, 'flip-kubelet', {
    taskName: S.initialiseFlipped,
    step: 'verify-node',
  });
  // A cluster external before the run: only the initialisation, as the upgrade would have done it.
  const verifyNodes = inBatches(S.verifyNodes, S.verifyNode, 'verify-node');
  const completeCcm = catchRollingBack(
    stepTask(scope, {
      stateName: S.completeCcm,
      step: 'activate-ccm',
      payload: sfn.TaskInput.fromObject({ ...IDS, nodeLifecycle: true }),
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  const verify = catchRollingBack(
    stepTask(scope, { stateName: S.verify, step: 'verify', payload: ids, resultPath: '$.verification' }),
  );
  // The cluster is migrated and verified by now: a failure to record it is not a reason to undo it.
  const finalize = catchAll(
    stepTask(scope, {
      stateName: S.finalize,
      step: 'finalize',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'verification.$': '$.verification' }),
      resultPath: '$.result',
    }),
  );

  controlPlane.next(activate).next(kubelets).next(completeCcm).next(verify);
  verifyNodes.next(completeCcm);
  const migrate = stage.next(
    new sfn.Choice(scope, S.useLeaderMigration, { stateName: S.useLeaderMigration })
      .when(
        isTrue('$.preflight.leaderMigration.enabled'),
        enableMigration.next(startCcmMigrating).next(ccmRuns).next(controlPlane),
      )
      .otherwise(controlPlane),
  );
  const gated = approvalChoice(scope, { ...opts, migration: 'upgrade', onError: catchAll, next: migrate });
  const chain = preflight.next(
    new sfn.Choice(scope, S.nothingToDo, { stateName: S.nothingToDo })
      .when(sfn.Condition.booleanEquals('$.preflight.alreadyExternal', true), verifyNodes)
      .otherwise(gated),
  );
  verify.next(finalize).next(new sfn.Succeed(scope, S.succeeded, { stateName: S.succeeded }));
  return sfn.DefinitionBody.fromChainable(chain);
}

/** The whole run's limit: preflight to finalize for a few hundred nodes in small batches. */
export const UPGRADE_TIMEOUT = Duration.hours(12);
