/**
 * How a state machine turns a step into a Task. The CDK stack invokes one Lambda per step; the local
 * engine renders the same definition with placeholder function ARNs and runs each Task in-process, keyed by
 * its state name. So every definition is built through a `StepTaskFactory` and never names a function.
 */
import {
  Duration,
  type aws_lambda as lambda,
  aws_stepfunctions as sfn,
  aws_stepfunctions_tasks as tasks,
} from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { STEP_RETRIES } from './retry-policies.ts';

/** The steps of every workflow, by the id that names their handler and Lambda function. */
export const STEP_IDS = [
  'preflight',
  'stage-ccm',
  'move-control-plane-node',
  'activate-ccm',
  'flip-kubelet',
  'verify-node',
  'verify',
  'finalize',
  'record-failure',
  'downgrade-preflight',
  'restore-kubelet',
  'stop-ccm',
  'restore-control-plane-node',
  'remove-ccm',
  'verify-in-tree',
  'record-rollback',
] as const;

/**
 * The drift workflow's steps (state-machines/drift.ts). Listed apart because they run with another context
 * (the registry and access to any registered cluster, lib/drift/steps.ts) than one cluster's migration
 * steps, and get their functions from the drift part of the stack.
 */
export const DRIFT_STEP_IDS = [
  'list-clusters',
  'check-drift',
  'publish-drift',
  'remediate-drift',
  'summarize-drift',
] as const;
export type DriftStepId = (typeof DRIFT_STEP_IDS)[number];
export type MigrationStepId = (typeof STEP_IDS)[number];
export type StepId = MigrationStepId | DriftStepId;

export interface StepTaskProps {
  /** The Task's state name: a short sentence, unique in the definition. */
  readonly stateName: string;
  readonly step: StepId;
  readonly payload: sfn.TaskInput;
  /** Where the step's result goes in the state; DISCARD keeps the input as it was. */
  readonly resultPath: string;
  /**
   * @default 6 minutes: more than a step function's timeout (STEP_TIMEOUT_MS, lib/steps/time-budget.ts), so
   * that the invocation's own deadline ends a long step, never the Task while the function still writes.
   */
  readonly timeout?: Duration;
}

export type StepTaskFactory = (scope: Construct, props: StepTaskProps) => sfn.TaskStateBase;

/** A Task that invokes `functionFor(step)` with the payload as the event and its return value as the result. */
export function lambdaStepTasks(functionFor: (step: StepId) => lambda.IFunction): StepTaskFactory {
  return (scope, props) => {
    const task = new tasks.LambdaInvoke(scope, props.stateName, {
      stateName: props.stateName,
      lambdaFunction: functionFor(props.step),
      payload: props.payload,
      payloadResponseOnly: true,
      resultPath: props.resultPath,
      taskTimeout: sfn.Timeout.duration(props.timeout ?? Duration.minutes(6)),
    });
    for (const retry of STEP_RETRIES) task.addRetry(retry);
    return task;
  };
}

/** Placeholder ARN of a step's function, for definitions rendered to run locally. */
export function localFunctionArn(step: StepId): string {
  return `arn:aws:lambda:local:000000000000:function:ccm-migrate-${step}`;
}
