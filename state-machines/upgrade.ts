/**
 * The upgrade: in-tree cloud provider → external cloud-controller-manager, for one cluster.
 *
 * Order matters for "never two cloud controllers, never none while a node waits": the CCM is staged (all
 * its objects applied, its workload scaled to zero) before the control plane moves, and started only once
 * no kube-controller-manager runs the in-tree cloud loops any more. Kubelets flip last: until then new nodes
 * register with the in-tree kubelet and need no CCM, and afterwards the CCM is there to initialise them.
 *
 * JSONPath only (HOUSE-STYLE 7): the local engine runs this same definition.
 */
import { Duration, aws_stepfunctions as sfn } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { StepId, StepTaskFactory } from './steps.ts';

/** Paths in the execution state. The input carries `clusterId`, `runId`, `maxUnavailable` and `options`. */
const IDS = { 'clusterId.$': '$.clusterId', 'runId.$': '$.runId' } as const;

export const UPGRADE_STATES = {
  preflight: 'Check the cluster',
  nothingToDo: 'Is it already external?',
  stage: 'Stage the CCM',
  controlPlane: 'Move the control plane, one node at a time',
  moveNode: 'Move a control-plane node',
  activate: 'Start the CCM',
  kubelets: 'Flip kubelets, control plane first',
  flipKubelet: 'Flip a kubelet',
  verify: 'Verify the cluster',
  finalize: 'Record the result',
  recordFailure: 'Record the failure',
  succeeded: 'Migrated',
  failed: 'Migration failed',
} as const;

function forEachNode(
  scope: Construct,
  opts: {
    mapName: string;
    itemsPath: string;
    taskName: string;
    step: StepId;
    stepTask: StepTaskFactory;
    concurrency: { maxConcurrency: number } | { maxConcurrencyPath: string };
  },
): sfn.Map {
  const map = new sfn.Map(scope, opts.mapName, {
    stateName: opts.mapName,
    itemsPath: opts.itemsPath,
    itemSelector: { ...IDS, 'node.$': '$$.Map.Item.Value' },
    resultPath: sfn.JsonPath.DISCARD,
    ...opts.concurrency,
  });
  map.itemProcessor(
    opts.stepTask(scope, {
      stateName: opts.taskName,
      step: opts.step,
      payload: sfn.TaskInput.fromObject({ ...IDS, 'node.$': '$.node' }),
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  return map;
}

/** The upgrade state machine's definition, with each step made into a Task by `stepTask`. */
export function upgradeDefinition(scope: Construct, stepTask: StepTaskFactory): sfn.DefinitionBody {
  const S = UPGRADE_STATES;
  const ids = sfn.TaskInput.fromObject(IDS);

  const recordFailure = stepTask(scope, {
    stateName: S.recordFailure,
    step: 'record-failure',
    payload: sfn.TaskInput.fromObject({ ...IDS, 'error.$': '$.error' }),
    resultPath: sfn.JsonPath.DISCARD,
  }).next(
    new sfn.Fail(scope, S.failed, {
      stateName: S.failed,
      causePath: '$.error.Cause',
      errorPath: '$.error.Error',
    }),
  );
  const catchAll = <T extends sfn.TaskStateBase | sfn.Map>(state: T): T =>
    state.addCatch(recordFailure, { errors: [sfn.Errors.ALL], resultPath: '$.error' }) as T;

  const preflight = catchAll(
    stepTask(scope, {
      stateName: S.preflight,
      step: 'preflight',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'options.$': '$.options' }),
      resultPath: '$.preflight',
    }),
  );
  const stage = catchAll(
    stepTask(scope, {
      stateName: S.stage,
      step: 'stage-ccm',
      payload: ids,
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  const controlPlane = catchAll(
    forEachNode(scope, {
      mapName: S.controlPlane,
      itemsPath: '$.preflight.controlPlaneNodes',
      taskName: S.moveNode,
      step: 'move-control-plane-node',
      stepTask,
      concurrency: { maxConcurrency: 1 },
    }),
  );
  const activate = catchAll(
    stepTask(scope, {
      stateName: S.activate,
      step: 'activate-ccm',
      payload: ids,
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  // One Map over every node, control-plane nodes first: at most maxUnavailable kubelets restart at once,
  // so the whole flip takes ⌈nodes / maxUnavailable⌉ kubelet restarts (a kubelet restart stops no pod).
  const kubelets = catchAll(
    forEachNode(scope, {
      mapName: S.kubelets,
      itemsPath: '$.preflight.kubeletOrder',
      taskName: S.flipKubelet,
      step: 'flip-kubelet',
      stepTask,
      concurrency: { maxConcurrencyPath: '$.maxUnavailable' },
    }),
  );
  const verify = catchAll(
    stepTask(scope, { stateName: S.verify, step: 'verify', payload: ids, resultPath: '$.verification' }),
  );
  const finalize = catchAll(
    stepTask(scope, {
      stateName: S.finalize,
      step: 'finalize',
      payload: sfn.TaskInput.fromObject({ ...IDS, 'verification.$': '$.verification' }),
      resultPath: '$.result',
    }),
  );

  const migrate = stage.next(controlPlane).next(activate).next(kubelets).next(verify);
  const chain = preflight.next(
    new sfn.Choice(scope, S.nothingToDo, { stateName: S.nothingToDo })
      .when(sfn.Condition.booleanEquals('$.preflight.alreadyExternal', true), verify)
      .otherwise(migrate),
  );
  verify.next(finalize).next(new sfn.Succeed(scope, S.succeeded, { stateName: S.succeeded }));
  return sfn.DefinitionBody.fromChainable(chain);
}

/** The whole run's limit: preflight to finalize for a few hundred nodes in small batches. */
export const UPGRADE_TIMEOUT = Duration.hours(12);
