/**
 * The alarms and the dashboard in the orchestrator's template: what each alarm watches (and that the
 * metrics it watches are the ones the functions emit), its threshold, and that it notifies the topic the
 * key lets CloudWatch publish to.
 */
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, expect, it } from 'vitest';
import { FUNCTION_IDS } from '../../cdk/bundling.ts';
import { METRICS } from '../../lib/aws/metrics.ts';
import { capturedLogger } from '../functions/captured-logger.ts';
import { testStack } from './stack.ts';

let template: Template;
let built: ReturnType<typeof testStack>;
const id = (construct: { node: { defaultChild?: unknown } }) =>
  built.stack.getLogicalId(construct.node.defaultChild as never);

beforeAll(() => {
  built = testStack();
  template = Template.fromStack(built.stack);
});

const notifying = () => ({
  AlarmActions: [{ Ref: id(built.orchestrator.topic) }],
  Threshold: 1,
  EvaluationPeriods: 1,
  ComparisonOperator: 'GreaterThanOrEqualToThreshold',
  TreatMissingData: 'notBreaching',
});

it('alarms on executions that failed, timed out or were aborted, per state machine', () => {
  for (const machine of [
    built.orchestrator.upgrade,
    built.orchestrator.downgrade,
    built.orchestrator.drift,
  ]) {
    const stat = (metric: string) =>
      Match.objectLike({
        MetricStat: Match.objectLike({
          Metric: {
            Namespace: 'AWS/States',
            MetricName: metric,
            Dimensions: [{ Name: 'StateMachineArn', Value: { Ref: id(machine) } }],
          },
          Stat: 'Sum',
          Period: 300,
        }),
      });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...notifying(),
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'failed + timedOut + aborted', ReturnData: true }),
        stat('ExecutionsFailed'),
        stat('ExecutionsTimedOut'),
        stat('ExecutionsAborted'),
      ]),
    });
  }
});

it('alarms on rolled-back upgrades with the metric the run-ended function writes', () => {
  // What run-ended logs (Embedded Metric Format) is what the alarm reads: namespace, name, dimensions.
  const lines: string[] = [];
  capturedLogger(lines).count(METRICS.runsEnded, { Kind: 'upgrade', Outcome: 'rolled-back' });
  expect(lines).toHaveLength(1);
  const line = JSON.parse(lines[0] ?? '{}') as {
    _aws: { CloudWatchMetrics: [{ Namespace: string; Dimensions: string[][]; Metrics: [{ Name: string }] }] };
  };
  const [directive] = line._aws.CloudWatchMetrics;
  template.hasResourceProperties('AWS::CloudWatch::Alarm', {
    ...notifying(),
    Metrics: [
      Match.objectLike({
        MetricStat: Match.objectLike({
          Metric: {
            Namespace: directive.Namespace,
            MetricName: directive.Metrics[0].Name,
            Dimensions: directive.Dimensions[0]?.map((name) => ({
              Name: name,
              Value: name === 'Kind' ? 'upgrade' : 'rolled-back',
            })),
          },
          Stat: 'Sum',
        }),
      }),
    ],
  });
  expect(line).toMatchObject({
    Kind: 'upgrade',
    Outcome: 'rolled-back',
    RunsEnded: 1,
  });
});

it('counts step errors other than waits from every function’s log, and alarms on them', () => {
  const filters = template.findResources('AWS::Logs::MetricFilter');
  const logGroups = Object.values(filters).map((f) => (f.Properties.LogGroupName as { Ref: string }).Ref);
  expect(new Set(logGroups).size).toBe(FUNCTION_IDS.length);
  for (const fid of FUNCTION_IDS) {
    const fn = built.orchestrator.functions.get(fid);
    expect(logGroups, fid).toContain(id(fn?.logGroup as never));
  }
  for (const f of Object.values(filters)) {
    expect(f.Properties).toMatchObject({
      FilterPattern: '{ ($.level = "ERROR") && ($.errorName != "NotReadyYet") }',
      MetricTransformations: [{ MetricNamespace: 'ccm-migrate', MetricName: 'StepErrors', MetricValue: '1' }],
    });
  }
  // The fields the pattern reads are the ones the handler's failure line has.
  const lines: string[] = [];
  capturedLogger(lines).error('failed', { step: 'verify', errorName: 'AgentFailed' });
  expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ level: 'ERROR', errorName: 'AgentFailed' });
  template.hasResourceProperties('AWS::CloudWatch::Alarm', {
    ...notifying(),
    Metrics: [
      Match.objectLike({
        MetricStat: Match.objectLike({ Metric: { Namespace: 'ccm-migrate', MetricName: 'StepErrors' } }),
      }),
    ],
  });
  template.resourceCountIs('AWS::CloudWatch::Alarm', 6);
});

it('lets CloudWatch use the key to publish to the encrypted topic', () => {
  template.hasResourceProperties('AWS::KMS::Key', {
    KeyPolicy: {
      Statement: Match.arrayWith([
        Match.objectLike({
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        }),
      ]),
    },
  });
});

it('has a dashboard showing every alarm and both machines’ executions', () => {
  const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
  const body = JSON.stringify(dashboard?.Properties.DashboardBody);
  const alarms = built.orchestrator.monitoring.alarms;
  for (const alarm of [
    alarms.runsFailed.upgrade,
    alarms.runsFailed.downgrade,
    alarms.upgradeRolledBack,
    alarms.stepErrors,
    alarms.driftRunsFailed,
    alarms.clustersDrifted,
  ]) {
    expect(body).toContain(id(alarm));
  }
  for (const machine of [built.orchestrator.upgrade, built.orchestrator.downgrade, built.orchestrator.drift])
    expect(body).toContain(id(machine));
  for (const metric of [
    'ExecutionsStarted',
    'ExecutionsSucceeded',
    'RunsEnded',
    'StepErrors',
    'ClustersDrifted',
  ]) {
    expect(body).toContain(metric);
  }
});

it('alarms on every drifted cluster a check finds, from the dimensionless metric check-drift writes', () => {
  const alarm = built.orchestrator.monitoring.alarms.clustersDrifted;
  const props = template.findResources('AWS::CloudWatch::Alarm')[id(alarm)]?.Properties;
  expect(props).toMatchObject({
    ...notifying(),
    Metrics: [
      {
        MetricStat: { Metric: { Namespace: 'ccm-migrate', MetricName: 'ClustersDrifted' }, Stat: 'Sum' },
      },
    ],
  });
  expect(props?.Metrics[0].MetricStat.Metric.Dimensions).toBeUndefined();
  // The line the handler writes is that metric, without dimensions (lib/aws/drift-step-handler.ts).
  const lines: string[] = [];
  capturedLogger(lines).count(METRICS.clustersDrifted, {});
  const line = JSON.parse(lines[0] ?? '{}');
  expect(line._aws.CloudWatchMetrics[0]).toMatchObject({
    Namespace: 'ccm-migrate',
    Dimensions: [[]],
    Metrics: [{ Name: 'ClustersDrifted', Unit: 'Count' }],
  });
  expect(line.ClustersDrifted).toBe(1);
});
