/**
 * Render a workflow's ASL in-process, exactly as the CDK stack deploys it, but with placeholder function
 * ARNs: the local engine then runs each Task by its state name. Rendering takes no synth and no files.
 */
import { App, aws_lambda as lambda, Stack, aws_stepfunctions as sfn } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import {
  lambdaStepTasks,
  localFunctionArn,
  type StepId,
  type StepTaskFactory,
} from '../../state-machines/steps.ts';

export type DefinitionBuilder = (scope: Construct, stepTask: StepTaskFactory) => sfn.DefinitionBody;

/** Each Task's state name → the step it runs, read back from the rendered definition. */
export type TaskSteps = ReadonlyMap<string, StepId>;

export interface RenderedWorkflow {
  readonly definition: Record<string, unknown>;
  readonly taskSteps: TaskSteps;
}

export function renderDefinition(build: DefinitionBuilder): RenderedWorkflow {
  const stack = new Stack(new App(), 'Local');
  const functions = new Map<StepId, lambda.IFunction>();
  const taskSteps = new Map<string, StepId>();
  const factory = lambdaStepTasks((step) => {
    let fn = functions.get(step);
    if (!fn) {
      fn = lambda.Function.fromFunctionArn(stack, `fn-${step}`, localFunctionArn(step));
      functions.set(step, fn);
    }
    return fn;
  });
  const body = build(stack, (scope, props) => {
    taskSteps.set(props.stateName, props.step);
    return factory(scope, props);
  });
  const machine = new sfn.StateMachine(stack, 'Machine', { definitionBody: body });
  const cfn = machine.node.defaultChild as sfn.CfnStateMachine;
  const definition = JSON.parse(localText(stack.resolve(cfn.definitionString))) as Record<string, unknown>;
  return { definition, taskSteps };
}

/**
 * The definition's text. Service integrations (the approval gate's SNS publish) name their resource with the
 * partition, which CloudFormation fills in: locally it is `aws`.
 */
function localText(resolved: unknown): string {
  if (typeof resolved === 'string') return resolved;
  const { 'Fn::Join': join, Ref: ref } = resolved as { 'Fn::Join'?: [string, unknown[]]; Ref?: string };
  if (join) return join[1].map(localText).join(join[0]);
  if (ref === 'AWS::Partition') return 'aws';
  throw new Error(`a locally rendered definition cannot hold ${JSON.stringify(resolved)}`);
}
