/**
 * Pieces both workflows are built from: the ids every step gets, a Map that runs one step per node, and
 * the restore sequence that the downgrade runs and an upgrade's rollback runs (state names unique within
 * each definition).
 */
import { aws_stepfunctions as sfn } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ERROR_NAMES } from '../lib/errors.ts';
import type { StepId, StepTaskFactory } from './steps.ts';

/** Paths in the execution state. The input carries `clusterId`, `runId`, `maxUnavailable` and `options`. */
export const IDS = { 'clusterId.$': '$.clusterId', 'runId.$': '$.runId' } as const;

/** Payload fields as JSONPath selections: `{ 'node.$': '$.node' }`. */
export type Fields = Readonly<Record<string, string>>;

export function forEachNode(
  scope: Construct,
  opts: {
    mapName: string;
    itemsPath: string;
    taskName: string;
    step: StepId;
    stepTask: StepTaskFactory;
    concurrency: { maxConcurrency: number } | { maxConcurrencyPath: string };
    /** More fields from the execution state for every item (e.g. the run to restore from). */
    fields?: Fields;
    /** Fixed values for every item (e.g. the leader migration phase the step runs). */
    constants?: Readonly<Record<string, string | boolean | number>>;
    /** A second step each item runs once the first succeeded, with the same payload, in the same slot. */
    then?: { readonly taskName: string; readonly step: StepId };
  },
): sfn.Map {
  const extra = opts.fields ?? {};
  const constants = opts.constants ?? {};
  const map = new sfn.Map(scope, opts.mapName, {
    stateName: opts.mapName,
    itemsPath: opts.itemsPath,
    itemSelector: { ...IDS, ...extra, ...constants, 'node.$': '$$.Map.Item.Value' },
    resultPath: sfn.JsonPath.DISCARD,
    ...opts.concurrency,
  });
  const itemFields = Object.fromEntries([
    ...Object.keys(extra).map((k) => [k, `$.${k.slice(0, -2)}`]),
    ...Object.keys(constants).map((k) => [`${k}.$`, `$.${k}`]),
  ]);
  const task = (stateName: string, step: StepId) =>
    opts.stepTask(scope, {
      stateName,
      step,
      payload: sfn.TaskInput.fromObject({ ...IDS, ...itemFields, 'node.$': '$.node' }),
      resultPath: sfn.JsonPath.DISCARD,
    });
  const first = task(opts.taskName, opts.step);
  map.itemProcessor(opts.then ? first.next(task(opts.then.taskName, opts.then.step)) : first);
  return map;
}

export interface RestoreStateNames {
  readonly kubelets: string;
  readonly restoreKubelet: string;
  readonly stopCcm: string;
  readonly controlPlane: string;
  readonly restoreNode: string;
  readonly removeCcm: string;
}

/** The states of the way back under leader migration (upstream's phases in reverse, lib/steps/leader-migration.ts). */
export interface HandBackStateNames {
  readonly useLeaderMigration: string;
  readonly ccmMigrating: string;
  /** Passed when the CCM never became Ready under the lease: the plain way from there. */
  readonly fallBack: string;
  readonly controlPlane: string;
  readonly restoreNode: string;
  readonly stopCcm: string;
  readonly migrationOff: string;
  readonly migrationOffNode: string;
}

/**
 * Kubelets back in-tree (maxUnavailable at a time), the CCM stopped, the control plane back one node at a
 * time, the CCM's objects removed: see lib/steps/restore.ts for why in this order. With `handBack`, on a
 * cluster preflight chose leader migration for: the CCM under leader migration, each kube-controller-manager
 * back in-tree with it, the CCM stopped, each one restored without it; the plain way if the CCM cannot roll
 * out under the migration lease.
 */
export function restoreSequence(
  scope: Construct,
  opts: {
    names: RestoreStateNames;
    stepTask: StepTaskFactory;
    /** Where the run to restore from, the node order and the control-plane nodes are in the state. */
    sourceRunIdPath: string;
    kubeletOrderPath: string;
    controlPlanePath: string;
    onError: <T extends Catchable>(state: T) => T;
    /** With these, a Choice on `decisionPath` (`enabled`) hands the cloud controllers back by leader migration. */
    handBack?: { names: HandBackStateNames; decisionPath: string };
  },
): { start: sfn.Map; end: sfn.TaskStateBase } {
  const { names, stepTask, onError } = opts;
  const source: Fields = { 'sourceRunId.$': opts.sourceRunIdPath };
  const ids = sfn.TaskInput.fromObject({ ...IDS, ...source });
  const controlPlaneBack = (mapName: string, taskName: string, leaderMigration: boolean): sfn.Map =>
    onError(
      forEachNode(scope, {
        mapName,
        itemsPath: opts.controlPlanePath,
        taskName,
        step: 'restore-control-plane-node',
        stepTask,
        concurrency: { maxConcurrency: 1 },
        // Each node's restore pre-starts the next one's agent (lib/steps/prestart.ts).
        fields: { ...source, 'order.$': opts.controlPlanePath },
        constants: { leaderMigration, lookahead: 1 },
      }),
    );
  const stopCcm = (stateName: string): sfn.TaskStateBase =>
    onError(stepTask(scope, { stateName, step: 'stop-ccm', payload: ids, resultPath: sfn.JsonPath.DISCARD }));
  const kubelets = onError(
    forEachNode(scope, {
      mapName: names.kubelets,
      itemsPath: opts.kubeletOrderPath,
      taskName: names.restoreKubelet,
      step: 'restore-kubelet',
      stepTask,
      concurrency: { maxConcurrencyPath: '$.maxUnavailable' },
      fields: { ...source, 'order.$': opts.kubeletOrderPath, 'lookahead.$': '$.maxUnavailable' },
    }),
  );
  const remove = onError(
    stepTask(scope, {
      stateName: names.removeCcm,
      step: 'remove-ccm',
      payload: ids,
      resultPath: sfn.JsonPath.DISCARD,
    }),
  );
  const plain = stopCcm(names.stopCcm);
  plain.next(controlPlaneBack(names.controlPlane, names.restoreNode, false)).next(remove);
  if (!opts.handBack) {
    kubelets.next(plain);
    return { start: kubelets, end: remove };
  }
  const hb = opts.handBack.names;
  const decision = opts.handBack.decisionPath;
  // A CCM that never became Ready under the migration lease (its waits ran out) cannot carry the cloud loops:
  // then the plain way (the CCM stopped first) is the safe one. Any other error ends the run as it stands,
  // the CCM still running them. The Pass state names the fallback in the progress output and the history.
  const fallBack = new sfn.Pass(scope, hb.fallBack, { stateName: hb.fallBack });
  fallBack.next(plain);
  const ccmMigrating = onError(
    stepTask(scope, {
      stateName: hb.ccmMigrating,
      step: 'activate-ccm',
      payload: sfn.TaskInput.fromObject({ ...IDS, handBack: true }),
      resultPath: sfn.JsonPath.DISCARD,
    }).addCatch(fallBack, {
      errors: [ERROR_NAMES.notReadyYet, ERROR_NAMES.deadlineReached],
      resultPath: '$.handBackError',
    }),
  );
  ccmMigrating
    .next(controlPlaneBack(hb.controlPlane, hb.restoreNode, true))
    .next(stopCcm(hb.stopCcm))
    .next(controlPlaneBack(hb.migrationOff, hb.migrationOffNode, false))
    .next(remove);
  kubelets.next(
    new sfn.Choice(scope, hb.useLeaderMigration, { stateName: hb.useLeaderMigration })
      .when(isTrue(`${decision}.enabled`), ccmMigrating)
      .otherwise(plain),
  );
  return { start: kubelets, end: remove };
}

/** A boolean in the state that is there and true (absent reads as false, never as an error). */
export function isTrue(path: string): sfn.Condition {
  return sfn.Condition.and(sfn.Condition.isPresent(path), sfn.Condition.booleanEquals(path, true));
}

/** A state that can be caught. */
export type Catchable = sfn.TaskStateBase | sfn.Map;

/**
 * The end of a failed run: record the error the Catch put at `errorPath` in the store (which releases the
 * cluster), then fail the execution with it. `catchInto` adds that Catch to a state; `record` is the first
 * state of the ending, for a Choice to go to.
 */
export function failureEnding(
  scope: Construct,
  stepTask: StepTaskFactory,
  opts: { recordName: string; failName: string; errorPath: string },
): { record: sfn.TaskStateBase; catchInto: <T extends Catchable>(state: T) => T } {
  const record = stepTask(scope, {
    stateName: opts.recordName,
    step: 'record-failure',
    payload: sfn.TaskInput.fromObject({ ...IDS, 'error.$': opts.errorPath }),
    resultPath: sfn.JsonPath.DISCARD,
  });
  record.next(
    new sfn.Fail(scope, opts.failName, {
      stateName: opts.failName,
      causePath: `${opts.errorPath}.Cause`,
      errorPath: `${opts.errorPath}.Error`,
    }),
  );
  return {
    record,
    catchInto: <T extends Catchable>(state: T): T =>
      state.addCatch(record, { errors: [sfn.Errors.ALL], resultPath: opts.errorPath }) as T,
  };
}
