/**
 * The deployable ccm-migrate: one construct a platform team drops into its own CDK app (or deploys through
 * cdk/app.ts). It holds the upgrade, downgrade and drift state machines (state-machines/, one Lambda per
 * step), the schedule that runs the drift checks, the run table, the event bus with the rule that starts
 * runs, the rule that sees runs end, a topic for notifications, a topic of their own for the approval
 * requests (whose subscribers answer them), and alarms and a dashboard (cdk/monitoring.ts). Each function's
 * role grants exactly the calls it makes.
 */
import {
  ArnFormat,
  type CfnResource,
  Duration,
  aws_dynamodb as dynamodb,
  type aws_ec2 as ec2,
  aws_events as events,
  aws_iam as iam,
  aws_kms as kms,
  aws_lambda as lambda,
  aws_logs as logs,
  Names,
  aws_lambda_nodejs as nodejs,
  RemovalPolicy,
  Stack,
  aws_scheduler as scheduler,
  aws_scheduler_targets as schedulerTargets,
  aws_stepfunctions as sfn,
  aws_sns as sns,
  Token,
  aws_events_targets as targets,
  Validations,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { DEFAULT_KUBECONFIG_SECRET_PREFIX, ENV } from '../lib/aws/env.ts';
import { executionEndedPattern, MIGRATION_REQUESTED_PATTERN, NOTIFY_PATTERN } from '../lib/events.ts';
import { STEP_TIMEOUT_MS } from '../lib/steps/time-budget.ts';
import { RUN_TABLE } from '../lib/store/table.ts';
import { APPROVAL_TIMEOUT } from '../state-machines/approval-gate.ts';
import { DOWNGRADE_TIMEOUT, downgradeDefinition } from '../state-machines/downgrade.ts';
import { DRIFT_TIMEOUT, driftDefinition } from '../state-machines/drift.ts';
import { DRIFT_STEP_IDS, lambdaStepTasks, STEP_IDS, type StepId } from '../state-machines/steps.ts';
import { UPGRADE_TIMEOUT, upgradeDefinition } from '../state-machines/upgrade.ts';
import { BUNDLING_PROJECT, bundlingFor, entryOf, type FunctionId, talksToCluster } from './bundling.ts';
import { acknowledgeCfnLint } from './cfn-lint.ts';
import { Monitoring } from './monitoring.ts';
import { powertoolsLayer } from './powertools-layer.ts';

export interface MigrationOrchestratorProps {
  /** The VPC whose subnets reach the clusters' API endpoints; without it the functions run outside any VPC. */
  readonly vpc?: ec2.IVpc;
  /** @default the VPC's private subnets */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /** Security groups that may reach the clusters' API endpoints (and Secrets Manager and DynamoDB). */
  readonly securityGroups?: ec2.ISecurityGroup[];
  /** The key of the kubeconfig secrets, the table and the topic; @default a key created here, rotated yearly. */
  readonly kmsKey?: kms.IKey;
  /** @default a name CloudFormation generates */
  readonly tableName?: string;
  /** Kubeconfig secrets are named `<prefix><clusterId>`; @default `ccm-migrate/clusters/` */
  readonly kubeconfigSecretPrefix?: string;
  /**
   * The node agent's image (Node 22 and nsenter; a tag is allowed, a digest pins it);
   * @default lib/kube/agent-job.ts DEFAULT_AGENT_IMAGE, pinned by digest
   */
  readonly agentImage?: string;
  /** @default one year */
  readonly logRetention?: logs.RetentionDays;
  /** How often the drift state machine checks every registered cluster; @default 15 minutes */
  readonly driftRate?: Duration;
  /** Clusters a drift run checks at once; @default 10 */
  readonly driftMaxConcurrency?: number;
  /**
   * How often a deep drift run (every node's kubelet read through the node agent: one short Job per node)
   * checks the fleet besides the shallow one: only a deep check sees a node that joined with the in-tree
   * kubelet flags of an old template, and only then are they flipped back for a cluster whose record says
   * autoRemediate. @default none: deep checks only when started by hand
   */
  readonly deepDriftRate?: Duration;
  /**
   * Every upgrade started by a `MigrationRequested` event (a drift run's remediation among them) waits after
   * preflight for `ccm-migrate approve`, whatever the event says; @default false: only runs that ask for it.
   */
  readonly requireApproval?: boolean;
  /**
   * The same for every downgrade started by a `MigrationRequested` event (a drift run's remediation back
   * in-tree among them); @default false: only runs that ask for it.
   */
  readonly requireDowngradeApproval?: boolean;
  /**
   * How long an approval gate waits before the run ends unchanged; the migration machines' timeouts grow by
   * as much. @default 24 hours
   */
  readonly approvalTimeout?: Duration;
}

/** An ARN of this stack as cdk-nag prints it in a finding (unresolved region and account as `<AWS::…>`). */
function nagArn(stack: Stack, service: string, resource: string): string {
  const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  return `arn:<AWS::Partition>:${service}:${region}:${account}:${resource}`;
}

/** The encryption context SNS gives KMS for a topic's messages: the topic's ARN. */
const SNS_TOPIC_CONTEXT = 'kms:EncryptionContext:aws:sns:topicArn';

const XRAY_REASON = 'X-Ray trace segments and telemetry take no resource: AWS requires "*" for them.';

/** Where a function's own reasons for a cdk-nag acknowledgement live: next to the grant they explain. */
function acknowledge(scope: Construct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
}

export class MigrationOrchestrator extends Construct {
  readonly table: dynamodb.Table;
  readonly bus: events.EventBus;
  /** Notifications: failed and rolled-back runs, drift, alarms. */
  readonly topic: sns.Topic;
  /**
   * The approval gate's requests, apart from the notifications: whoever may read a request holds its task
   * token, and so may answer it.
   */
  readonly approvalTopic: sns.Topic;
  readonly key: kms.IKey;
  readonly upgrade: sfn.StateMachine;
  readonly downgrade: sfn.StateMachine;
  /** Drift checks over the registered fleet, started by `driftSchedule`. */
  readonly drift: sfn.StateMachine;
  readonly driftSchedule: scheduler.Schedule;
  /** Deep drift checks, when `deepDriftRate` asks for them. */
  readonly deepDriftSchedule: scheduler.Schedule | undefined;
  readonly functions: ReadonlyMap<FunctionId, nodejs.NodejsFunction>;
  /** The alarms (notifying the topic) and the dashboard. */
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: MigrationOrchestratorProps = {}) {
    super(scope, id);
    const stack = Stack.of(this);
    const retention = props.logRetention ?? logs.RetentionDays.ONE_YEAR;
    const secretPrefix = props.kubeconfigSecretPrefix ?? DEFAULT_KUBECONFIG_SECRET_PREFIX;

    this.key =
      props.kmsKey ??
      new kms.Key(this, 'Key', {
        description: 'ccm-migrate: kubeconfig secrets, run table, notifications',
        enableKeyRotation: true,
        removalPolicy: RemovalPolicy.RETAIN,
      });

    this.table = new dynamodb.Table(this, 'Runs', {
      partitionKey: { name: RUN_TABLE.partitionKey.name, type: dynamodb.AttributeType.STRING },
      sortKey: { name: RUN_TABLE.sortKey.name, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      removalPolicy: RemovalPolicy.RETAIN,
      ...(props.tableName ? { tableName: props.tableName } : {}),
    });

    this.bus = new events.EventBus(this, 'Bus', { eventBusName: `${stack.stackName}-ccm-migrate` });
    // Named, so that the key's policy can spell its ARN without a reference to it (the topic refers to the
    // key: a reference back would be a cycle).
    const notificationTopicName = `${Names.uniqueResourceName(this, { maxLength: 200, separator: '-' })}-notifications`;
    this.topic = new sns.Topic(this, 'Notifications', {
      topicName: notificationTopicName,
      masterKey: this.key,
      enforceSSL: true,
    });
    this.approvalTopic = new sns.Topic(this, 'Approvals', { masterKey: this.key, enforceSSL: true });

    const secretsArn = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${secretPrefix}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    const functions = new Map<FunctionId, nodejs.NodejsFunction>();
    const layers = [powertoolsLayer(this)];
    // The drift functions only read the registry (but remediate-drift, which records its run); the migration
    // functions keep runs, locks and snapshots.
    const fn = (
      fid: FunctionId,
      environment: Record<string, string>,
      table: 'read' | 'readWrite' = 'readWrite',
    ): nodejs.NodejsFunction => {
      const cluster = talksToCluster(fid);
      const f = new nodejs.NodejsFunction(this, `Fn-${fid}`, {
        entry: entryOf(fid),
        handler: 'handler',
        ...BUNDLING_PROJECT,
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        // A step's waits share one deadline this long less a margin (lib/steps/time-budget.ts).
        timeout: cluster ? Duration.millis(STEP_TIMEOUT_MS) : Duration.seconds(30),
        memorySize: cluster ? 512 : 256,
        tracing: lambda.Tracing.ACTIVE,
        layers,
        bundling: bundlingFor(fid),
        environment: { ...environment, [ENV.tableName]: this.table.tableName },
        logGroup: new logs.LogGroup(this, `Logs-${fid}`, { retention, removalPolicy: RemovalPolicy.DESTROY }),
        ...(cluster && props.vpc
          ? {
              vpc: props.vpc,
              ...(props.vpcSubnets ? { vpcSubnets: props.vpcSubnets } : {}),
              ...(props.securityGroups ? { securityGroups: props.securityGroups } : {}),
            }
          : {}),
      });
      acknowledgeCfnLint(f.node.defaultChild as CfnResource, ['W3005']);
      if (table === 'read') this.table.grantReadData(f);
      else this.table.grantReadWriteData(f);
      functions.set(fid, f);
      return f;
    };

    const clusterEnv = {
      [ENV.kubeconfigSecretPrefix]: secretPrefix,
      ...(props.agentImage ? { [ENV.agentImage]: props.agentImage } : {}),
    };
    // Read-only, and only under the prefix: a registry record naming another secret is refused by the code
    // (lib/aws/cluster-access.ts) and would be denied here.
    const grantClusterAccess = (f: nodejs.NodejsFunction) => {
      f.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secretsArn] }),
      );
      // Secrets Manager decrypts with the caller's permission on the key, and only through itself.
      f.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [this.key.keyArn],
          conditions: {
            StringEquals: { 'kms:ViaService': `secretsmanager.${stack.region}.amazonaws.com` },
          },
        }),
      );
      acknowledge(
        f,
        `AwsSolutions-IAM5[Resource::${nagArn(stack, 'secretsmanager', `secret:${secretPrefix}*`)}]`,
        'Every registered cluster has its own kubeconfig secret under this prefix, added after deployment; ' +
          'the grant is read-only and limited to the prefix.',
      );
    };

    for (const step of STEP_IDS) {
      const f = fn(step, clusterEnv);
      if (talksToCluster(step)) grantClusterAccess(f);
    }
    for (const step of DRIFT_STEP_IDS) {
      const cluster = talksToCluster(step);
      const publishes = step === 'publish-drift';
      const f = fn(
        step,
        {
          ...(cluster ? clusterEnv : {}),
          ...(publishes ? { [ENV.eventBusName]: this.bus.eventBusName } : {}),
        },
        step === 'remediate-drift' ? 'readWrite' : 'read',
      );
      if (cluster) grantClusterAccess(f);
      if (publishes) this.bus.grantPutEventsTo(f);
    }

    const stepTask = lambdaStepTasks((step: StepId) => functions.get(step) as lambda.IFunction);
    const machineLogs = (name: string) =>
      new logs.LogGroup(this, `${name}Logs`, {
        logGroupName: `/aws/vendedlogs/states/${stack.stackName}-${name}`,
        retention,
        removalPolicy: RemovalPolicy.DESTROY,
      });
    const machine = (name: string, definitionBody: sfn.DefinitionBody, timeout: Duration) => {
      const m = new sfn.StateMachine(this, name, {
        definitionBody,
        stateMachineType: sfn.StateMachineType.STANDARD,
        timeout,
        tracingEnabled: true,
        // ERROR without execution data: a run's history is in Step Functions already, and the logs keep no payload.
        logs: { destination: machineLogs(name), level: sfn.LogLevel.ERROR, includeExecutionData: false },
      });
      acknowledgeCfnLint(m.node.defaultChild as CfnResource, ['W3005']);
      return m;
    };
    // Each definition in its own scope: both use the same state names ("Check the cluster", …).
    const approvalTimeout = props.approvalTimeout ?? APPROVAL_TIMEOUT;
    this.upgrade = machine(
      'Upgrade',
      upgradeDefinition(new Construct(this, 'UpgradeStates'), stepTask, {
        approvalTopic: this.approvalTopic,
        approvalTimeout,
      }),
      // A run that waited its whole approval time still has the whole run's time to migrate.
      UPGRADE_TIMEOUT.plus(approvalTimeout),
    );
    this.downgrade = machine(
      'Downgrade',
      downgradeDefinition(new Construct(this, 'DowngradeStates'), stepTask, {
        approvalTopic: this.approvalTopic,
        approvalTimeout,
      }),
      DOWNGRADE_TIMEOUT.plus(approvalTimeout),
    );
    // The gates' publish to the encrypted topic: SNS encrypts it with the key, for this topic only.
    for (const m of [this.upgrade, this.downgrade]) {
      m.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
          resources: [this.key.keyArn],
          conditions: { StringEquals: { [SNS_TOPIC_CONTEXT]: this.approvalTopic.topicArn } },
        }),
      );
    }
    this.drift = machine(
      'Drift',
      driftDefinition(new Construct(this, 'DriftStates'), stepTask),
      DRIFT_TIMEOUT,
    );
    // The Distributed Map runs a child execution per cluster: CDK grants the machine its own executions.
    const driftName = JSON.stringify({
      'Fn::Select': [
        6,
        {
          'Fn::Split': [
            ':',
            { Ref: stack.getLogicalId(this.drift.node.defaultChild as sfn.CfnStateMachine) },
          ],
        },
      ],
    });
    for (const executions of [`execution:${driftName}:*`, `execution:${driftName}/*:*`]) {
      acknowledge(
        this.drift,
        `AwsSolutions-IAM5[Resource::${nagArn(stack, 'states', executions)}]`,
        'The Distributed Map describes and stops its own child executions, named by Step Functions at run time; ' +
          'the grant is limited to executions of the drift machine.',
      );
    }
    for (const m of [this.upgrade, this.downgrade, this.drift]) {
      acknowledge(
        m,
        'AwsSolutions-SF1',
        'Logging ALL would copy every state payload into the logs; ERROR is enough next to the execution history.',
      );
      acknowledge(
        m,
        'AwsSolutions-IAM5[Resource::*]',
        `${XRAY_REASON} So do the CloudWatch Logs delivery actions a state machine needs to log (vended logs).`,
      );
      // The invoke grant covers each step function's versions and aliases.
      for (const f of functions.values()) {
        const arn = stack.getLogicalId(f.node.defaultChild as lambda.CfnFunction);
        acknowledge(
          m,
          `AwsSolutions-IAM5[Resource::<${arn}.Arn>:*]`,
          'Step Functions invokes the step functions by ARN, and the grant also covers their versions and aliases.',
        );
      }
    }

    const machineEnv = {
      [ENV.upgradeStateMachineArn]: this.upgrade.stateMachineArn,
      [ENV.downgradeStateMachineArn]: this.downgrade.stateMachineArn,
      [ENV.eventBusName]: this.bus.eventBusName,
    };
    const starter = fn('starter', {
      ...machineEnv,
      ...(props.requireApproval ? { [ENV.requireApproval]: 'true' } : {}),
      ...(props.requireDowngradeApproval ? { [ENV.requireDowngradeApproval]: 'true' } : {}),
    });
    this.upgrade.grantStartExecution(starter);
    this.downgrade.grantStartExecution(starter);
    this.bus.grantPutEventsTo(starter);
    const runEnded = fn('run-ended', machineEnv);
    this.bus.grantPutEventsTo(runEnded);
    this.functions = functions;

    for (const f of functions.values()) {
      acknowledge(
        f,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        'The AWS managed basic execution role only lets the function write its own logs.',
      );
      acknowledge(
        f,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        "The AWS managed VPC access role only manages the function's network interfaces in the given VPC.",
      );
      acknowledge(f, 'AwsSolutions-IAM5[Resource::*]', XRAY_REASON);
      for (const action of ['kms:ReEncrypt*', 'kms:GenerateDataKey*']) {
        acknowledge(
          f,
          `AwsSolutions-IAM5[Action::${action}]`,
          'The table is encrypted with the key: DynamoDB needs these key actions for the item reads and writes ' +
            'of this function, on this key only.',
        );
      }
      acknowledge(
        f,
        'AwsSolutions-L1',
        'The functions run on Node.js 22, the version the project and its node agent are built and tested on.',
      );
    }

    new events.Rule(this, 'OnMigrationRequested', {
      eventBus: this.bus,
      description: 'MigrationRequested → the starter, which names the execution after the request',
      eventPattern: MIGRATION_REQUESTED_PATTERN,
      targets: [new targets.LambdaFunction(starter, { retryAttempts: 8, maxEventAge: Duration.hours(1) })],
    });
    // Step Functions reports its executions' status changes on the account's default bus.
    new events.Rule(this, 'OnRunEnded', {
      description: 'An upgrade or downgrade ended: release its cluster when no Catch ran, and announce it',
      eventPattern: executionEndedPattern([this.upgrade.stateMachineArn, this.downgrade.stateMachineArn]),
      targets: [new targets.LambdaFunction(runEnded, { retryAttempts: 8, maxEventAge: Duration.hours(6) })],
    });
    new events.Rule(this, 'Notify', {
      eventBus: this.bus,
      description: 'Failed and rolled-back runs and drift, to the notification topic',
      eventPattern: NOTIFY_PATTERN,
      targets: [new targets.SnsTopic(this.topic, { role: this.notifyRole() })],
    });
    // The schedule's role may only start the drift machine (the target's own grant); the execution name is
    // Step Functions' own, the run id the schedule's invocation id (lower-case letters and digits).
    const driftSchedule = (id: string, depth: 'shallow' | 'deep', rate: Duration) =>
      new scheduler.Schedule(this, id, {
        description: `ccm-migrate: ${depth} drift checks over every registered cluster`,
        schedule: scheduler.ScheduleExpression.rate(rate),
        target: new schedulerTargets.StepFunctionsStartExecution(this.drift, {
          input: scheduler.ScheduleTargetInput.fromObject({
            runId: scheduler.ContextAttribute.executionId,
            depth,
            maxConcurrency: props.driftMaxConcurrency ?? 10,
          }),
          retryAttempts: 2,
        }),
      });
    this.driftSchedule = driftSchedule('DriftSchedule', 'shallow', props.driftRate ?? Duration.minutes(15));
    this.deepDriftSchedule = props.deepDriftRate
      ? driftSchedule('DeepDriftSchedule', 'deep', props.deepDriftRate)
      : undefined;
    this.monitoring = new Monitoring(this, 'Monitoring', {
      machines: { upgrade: this.upgrade, downgrade: this.downgrade },
      drift: this.drift,
      functions: [...functions.values()],
      topic: this.topic,
    });
    this.allowAlarmsToNotify(stack.formatArn({ service: 'sns', resource: notificationTopicName }));
  }

  /**
   * The role EventBridge publishes to the notification topic as, which only this account's rules on the bus
   * can pass (aws:SourceArn): a role, and not the key policy's service principal, because EventBridge's
   * request to KMS for a topic target carries no aws:SourceArn or aws:SourceAccount to condition it on
   * (docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services). The target
   * grants it the publish and the key for the topic.
   */
  private notifyRole(): iam.Role {
    const stack = Stack.of(this);
    const role = new iam.Role(this, 'NotifyRole', {
      description: 'ccm-migrate: EventBridge publishes notifications to the topic',
      assumedBy: new iam.ServicePrincipal('events.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: {
          'aws:SourceArn': stack.formatArn({
            service: 'events',
            resource: 'rule',
            resourceName: `${this.bus.eventBusName}/*`,
          }),
        },
      }),
    });
    acknowledge(
      role,
      'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]',
      'SNS encrypts each notification with a data key of the stack key; the grant is on that key only.',
    );
    return role;
  }

  /**
   * CloudWatch alarms publish to the encrypted notification topic, and SNS uses the key on their behalf:
   * the key policy lets CloudWatch use it for that topic only (SNS's encryption context names it), on behalf
   * of this account's alarms only (aws:SourceArn, aws:SourceAccount).
   */
  private allowAlarmsToNotify(topicArn: string): void {
    const stack = Stack.of(this);
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: {
          StringEquals: { [SNS_TOPIC_CONTEXT]: topicArn, 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': stack.formatArn({
              service: 'cloudwatch',
              resource: 'alarm',
              resourceName: '*',
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
  }
}
