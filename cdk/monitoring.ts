/**
 * What an operator watches: an alarm per state machine for runs that ended failed (Step Functions' own
 * execution metrics), one for upgrades that rolled back (the RunsEnded metric of the run-ended function),
 * one for step errors other than waits (a metric filter on every function's log), one for drift runs that
 * ended failed, one for drifted clusters (the ClustersDrifted metric of check-drift), each notifying the
 * topic; and a dashboard of the same. docs/deploy.md says what each alarm means.
 */
import {
  aws_cloudwatch_actions as actions,
  aws_cloudwatch as cloudwatch,
  Duration,
  type aws_lambda as lambda,
  aws_logs as logs,
  type aws_stepfunctions as sfn,
  type aws_sns as sns,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { METRIC_NAMESPACE, METRICS, RUN_OUTCOMES } from '../lib/aws/metrics.ts';
import { ERROR_NAMES } from '../lib/errors.ts';
import type { MigrationKind } from '../lib/local/migration.ts';

export interface MonitoringProps {
  readonly machines: Readonly<Record<MigrationKind, sfn.StateMachine>>;
  /** The drift state machine (state-machines/drift.ts). */
  readonly drift: sfn.StateMachine;
  readonly functions: readonly lambda.Function[];
  readonly topic: sns.ITopic;
  /** @default five minutes */
  readonly period?: Duration;
}

/** Where each alarm and the dashboard are, for the construct's users and the tests. */
export interface MonitoringAlarms {
  readonly runsFailed: Readonly<Record<MigrationKind, cloudwatch.Alarm>>;
  readonly upgradeRolledBack: cloudwatch.Alarm;
  readonly stepErrors: cloudwatch.Alarm;
  /** A drift run failed, timed out or was aborted: the fleet went unchecked. */
  readonly driftRunsFailed: cloudwatch.Alarm;
  /** A drift check found a cluster away from its desired mode. */
  readonly clustersDrifted: cloudwatch.Alarm;
}

const KINDS = ['upgrade', 'downgrade'] as const;
const title = (kind: MigrationKind) => (kind === 'upgrade' ? 'Upgrade' : 'Downgrade');

export class Monitoring extends Construct {
  readonly alarms: MonitoringAlarms;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const period = props.period ?? Duration.minutes(5);
    const notify = new actions.SnsAction(props.topic);
    const alarm = (name: string, metric: cloudwatch.IMetric, description: string): cloudwatch.Alarm => {
      const a = new cloudwatch.Alarm(this, name, {
        metric,
        alarmDescription: description,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No execution, no step: nothing went wrong.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      a.addAlarmAction(notify);
      return a;
    };

    // Step Functions' own counts: they hold even when a function of ours could not run.
    const ended = (m: sfn.StateMachine) =>
      new cloudwatch.MathExpression({
        expression: 'failed + timedOut + aborted',
        usingMetrics: {
          failed: m.metricFailed({ period, statistic: 'Sum' }),
          timedOut: m.metricTimedOut({ period, statistic: 'Sum' }),
          aborted: m.metricAborted({ period, statistic: 'Sum' }),
        },
        label: 'failed, timed out or aborted',
        period,
      });
    const runsEnded = (kind: MigrationKind, outcome: (typeof RUN_OUTCOMES)[number]) =>
      new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName: METRICS.runsEnded,
        dimensionsMap: { Kind: kind, Outcome: outcome },
        statistic: 'Sum',
        period,
        label: `${kind} ${outcome}`,
      });
    const stepErrors = new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName: METRICS.stepErrors,
      statistic: 'Sum',
      period,
      label: 'step errors (waits aside)',
    });
    const clustersDrifted = new cloudwatch.Metric({
      namespace: METRIC_NAMESPACE,
      metricName: METRICS.clustersDrifted,
      statistic: 'Sum',
      period,
      label: 'drifted clusters found',
    });

    // A step that answers NotReadyYet is waiting by design (the state machine retries it): not an error.
    // ERROR as Powertools' Logger names the level (lib/aws/logger.ts).
    for (const f of props.functions) {
      new logs.MetricFilter(this, `StepErrors-${f.node.id}`, {
        logGroup: f.logGroup,
        metricNamespace: METRIC_NAMESPACE,
        metricName: METRICS.stepErrors,
        metricValue: '1',
        filterPattern: logs.FilterPattern.all(
          logs.FilterPattern.stringValue('$.level', '=', 'ERROR'),
          logs.FilterPattern.stringValue('$.errorName', '!=', ERROR_NAMES.notReadyYet),
        ),
      });
    }

    this.alarms = {
      runsFailed: Object.fromEntries(
        KINDS.map((kind) => [
          kind,
          alarm(
            `${title(kind)}RunsFailed`,
            ended(props.machines[kind]),
            kind === 'upgrade'
              ? 'An upgrade execution ended FAILED, TIMED_OUT or ABORTED (a rolled-back one included): see the ' +
                  'MigrationFailed or MigrationRolledBack event and the execution history.'
              : 'A downgrade execution ended FAILED, TIMED_OUT or ABORTED: see the MigrationFailed event and the ' +
                  'execution history; the run stopped where it stands.',
          ),
        ]),
      ) as Record<MigrationKind, cloudwatch.Alarm>,
      // Only an upgrade rolls back; a downgrade that fails stops where it stands (RunsFailed).
      upgradeRolledBack: alarm(
        'UpgradeRolledBack',
        runsEnded('upgrade', 'rolled-back'),
        'An upgrade failed and was rolled back: the cluster is on its in-tree provider again; the cause is in ' +
          'the MigrationRolledBack event and the run record.',
      ),
      stepErrors: alarm(
        'StepErrors',
        stepErrors,
        'A step function failed with an error other than NotReadyYet (a retry may still save the run): ' +
          'see the functions’ logs for the error name.',
      ),
      driftRunsFailed: alarm(
        'DriftRunsFailed',
        ended(props.drift),
        'A drift run ended FAILED, TIMED_OUT or ABORTED (one cluster never fails it: listing the registry or ' +
          'summing up did): the fleet went unchecked; see the execution history.',
      ),
      clustersDrifted: alarm(
        'ClustersDrifted',
        clustersDrifted,
        'A drift check found a cluster away from its desired mode: see the DriftDetected event (on the topic) ' +
          'or the drift execution’s results; a remediation run was requested where the cluster’s policy says so.',
      ),
    };

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.days(7),
      widgets: [
        [
          new cloudwatch.AlarmStatusWidget({
            title: 'Alarms',
            alarms: [
              ...Object.values(this.alarms.runsFailed),
              this.alarms.upgradeRolledBack,
              this.alarms.stepErrors,
              this.alarms.driftRunsFailed,
              this.alarms.clustersDrifted,
            ],
            width: 24,
          }),
        ],
        KINDS.map(
          (kind) =>
            new cloudwatch.GraphWidget({
              title: `${title(kind)} executions`,
              left: [
                props.machines[kind].metricStarted({ period, statistic: 'Sum' }),
                props.machines[kind].metricSucceeded({ period, statistic: 'Sum' }),
                ended(props.machines[kind]),
              ],
              width: 12,
            }),
        ),
        [
          new cloudwatch.GraphWidget({
            title: 'Runs ended, by outcome',
            left: KINDS.flatMap((kind) => RUN_OUTCOMES.map((outcome) => runsEnded(kind, outcome))),
            width: 12,
          }),
          new cloudwatch.GraphWidget({ title: 'Step errors (waits aside)', left: [stepErrors], width: 12 }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: 'Drift executions',
            left: [
              props.drift.metricStarted({ period, statistic: 'Sum' }),
              props.drift.metricSucceeded({ period, statistic: 'Sum' }),
              ended(props.drift),
            ],
            width: 12,
          }),
          new cloudwatch.GraphWidget({ title: 'Drifted clusters found', left: [clustersDrifted], width: 12 }),
        ],
      ],
    });
  }
}
