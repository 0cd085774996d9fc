/**
 * The approval gate in the synthesized stack: the KMS-encrypted topic of its own it publishes to, the gate state in
 * the upgrade definition (where it stands, what it publishes, its timeout and where its failures go), the
 * one role allowed to publish, the construct's props, and cdk-nag with those props.
 */
import { createRequire } from 'node:module';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { MigrationOrchestrator } from '../../cdk/orchestrator.ts';
import { DOWNGRADE_STATES } from '../../state-machines/downgrade.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { testStack } from './stack.ts';

// asl-validator ships no types: its call signature, as documented.
const aslValidator = createRequire(import.meta.url)('asl-validator') as (definition: unknown) => {
  isValid: boolean;
  errors: unknown[];
};

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
type State = Record<string, unknown> & { Type: string };
type Built = { stack: Stack; orchestrator: MigrationOrchestrator; resources: Resources };

const S = UPGRADE_STATES;
let plain: Built;
let approving: Built;
let nagReport: string;

const built = (stack: Stack, orchestrator: MigrationOrchestrator): Built => ({
  stack,
  orchestrator,
  resources: Template.fromStack(stack).toJSON().Resources as Resources,
});

beforeAll(() => {
  const { stack, orchestrator } = testStack();
  plain = built(stack, orchestrator);
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const other = new Stack(app, 'Approving', { env: { account: '111111111111', region: 'eu-west-1' } });
  const gated = new MigrationOrchestrator(other, 'CcmMigrate', {
    requireApproval: true,
    requireDowngradeApproval: true,
    approvalTimeout: Duration.hours(2),
  });
  // The plugins run at synth and fail it with a report of every unacknowledged finding.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  nagReport = '';
  try {
    app.synth();
  } catch (err) {
    nagReport = (err as Error).message;
  }
  approving = built(other, gated);
});

const logicalId = (b: Built, construct: { node: { defaultChild?: unknown } }) =>
  b.stack.getLogicalId(construct.node.defaultChild as never);

/** CloudFormation's values as the deployed definition gets them: the partition, the topic, the functions. */
function deployedText(part: unknown): string {
  if (typeof part === 'string') return part;
  const {
    'Fn::Join': join,
    Ref: ref,
    'Fn::GetAtt': att,
  } = part as {
    'Fn::Join'?: [string, unknown[]];
    Ref?: string;
    'Fn::GetAtt'?: [string, string];
  };
  if (join) return join[1].map(deployedText).join(join[0]);
  if (ref === 'AWS::Partition') return 'aws';
  if (ref) return `arn:aws:sns:eu-west-1:111111111111:${ref}`;
  if (att) return `arn:aws:lambda:eu-west-1:111111111111:function:${att[0]}`;
  throw new Error(`unexpected ${JSON.stringify(part)}`);
}

function definitionOf(b: Built, m: Construct): { TimeoutSeconds: number; States: Record<string, State> } {
  const machine = b.resources[logicalId(b, m)];
  return JSON.parse(deployedText(machine?.Properties.DefinitionString)) as never;
}
const upgradeMachine = (b: Built) => definitionOf(b, b.orchestrator.upgrade);
const downgradeMachine = (b: Built) => definitionOf(b, b.orchestrator.downgrade);

function statements(
  b: Built,
): Array<{ role: string; Action: string | string[]; Resource: unknown; Condition?: unknown }> {
  return Object.values(b.resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((p) =>
      (
        p.Properties.PolicyDocument as { Statement: Array<{ Action: string | string[]; Resource: unknown }> }
      ).Statement.map((s) => ({ ...s, role: (p.Properties.Roles as Array<{ Ref: string }>)[0]?.Ref ?? '' })),
    );
}
const actions = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('the topic', () => {
  it('is one of its own, encrypted with the stack key, refusing requests without TLS', () => {
    const approvals = logicalId(plain, plain.orchestrator.approvalTopic);
    expect(approvals).not.toBe(logicalId(plain, plain.orchestrator.topic));
    expect(plain.resources[approvals]?.Properties.KmsMasterKeyId).toEqual({
      'Fn::GetAtt': [logicalId(plain, plain.orchestrator.key as never), 'Arn'],
    });
    const policy = Object.values(plain.resources).find(
      (r) =>
        r.Type === 'AWS::SNS::TopicPolicy' &&
        JSON.stringify(r.Properties.Topics) === JSON.stringify([{ Ref: approvals }]),
    );
    expect(JSON.stringify(policy?.Properties.PolicyDocument)).toMatch(
      /"Effect":"Deny".*"aws:SecureTransport":"false"|"aws:SecureTransport":"false".*"Effect":"Deny"/,
    );
  });

  it('gets nothing but approval requests: no rule or alarm notifies it', () => {
    const approvals = { Ref: logicalId(plain, plain.orchestrator.approvalTopic) };
    const targeting = Object.entries(plain.resources)
      .filter(([, r]) => r.Type === 'AWS::Events::Rule' || r.Type === 'AWS::CloudWatch::Alarm')
      .filter(([, r]) => JSON.stringify(r.Properties).includes(JSON.stringify(approvals)))
      .map(([id]) => id);
    expect(targeting).toEqual([]);
  });
});

describe('the gate in the upgrade definition', () => {
  it('stands after preflight found work to do and before the first change, taken only when the input asks', () => {
    const { States } = upgradeMachine(plain);
    expect(States[S.nothingToDo]?.Default).toBe(S.needsApproval);
    expect(States[S.needsApproval]).toEqual({
      Type: 'Choice',
      Choices: [
        {
          And: [
            { Variable: '$.options.requireApproval', IsPresent: true },
            { Variable: '$.options.requireApproval', BooleanEquals: true },
          ],
          Next: S.approval,
        },
      ],
      Default: S.stage,
    });
    expect(States[S.approval]?.Next).toBe(S.stage);
  });

  it('publishes ids, counts, the command lines and the task token to the topic, and waits 24 h for the token', () => {
    const { States, TimeoutSeconds } = upgradeMachine(plain);
    const gate = States[S.approval] as State & {
      Parameters: { TopicArn: string; Message: Record<string, string> };
    };
    expect(gate.Resource).toBe('arn:aws:states:::sns:publish.waitForTaskToken');
    expect(gate.Parameters.TopicArn).toBe(
      `arn:aws:sns:eu-west-1:111111111111:${logicalId(plain, plain.orchestrator.approvalTopic)}`,
    );
    expect(Object.keys(gate.Parameters.Message).sort()).toEqual(
      [
        'approve.$',
        'clusterId.$',
        'kind',
        'kubernetesVersion.$',
        'migration',
        'nodes.$',
        'provider.$',
        'reject.$',
        'runId.$',
        'taskToken.$',
      ].sort(),
    );
    expect(gate.Parameters.Message['taskToken.$']).toBe('$$.Task.Token');
    expect(gate.TimeoutSeconds).toBe(24 * 3600);
    expect(gate).not.toHaveProperty('HeartbeatSeconds');
    // The run's own 12 h come after the whole approval time.
    expect(TimeoutSeconds).toBe(36 * 3600);
  });

  it('ends a rejection or a timeout through the failure record, not the rollback', () => {
    const { States } = upgradeMachine(plain);
    expect(States[S.approval]?.Catch).toEqual([
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: S.recordFailure },
    ]);
    expect(States[S.recordFailure]?.Next).toBe(S.failed);
  });

  it('is a definition asl-validator accepts', () => {
    const { isValid, errors } = aslValidator(upgradeMachine(plain));
    expect(errors).toEqual([]);
    expect(isValid).toBe(true);
  });
});

describe('the gate in the downgrade definition', () => {
  it('stands after preflight found work to do and before the first restore, off unless the input asks', () => {
    const { States, TimeoutSeconds } = downgradeMachine(plain);
    const D = DOWNGRADE_STATES;
    expect(States[D.nothingToDo]?.Default).toBe(D.needsApproval);
    expect(States[D.needsApproval]?.Choices).toEqual([
      {
        And: [
          { Variable: '$.options.requireApproval', IsPresent: true },
          { Variable: '$.options.requireApproval', BooleanEquals: true },
        ],
        Next: D.approval,
      },
    ]);
    expect(States[D.needsApproval]?.Default).toBe(States[D.approval]?.Next);
    expect(States[D.approval]).toMatchObject({
      Resource: 'arn:aws:states:::sns:publish.waitForTaskToken',
      TimeoutSeconds: 24 * 3600,
      Parameters: {
        TopicArn: `arn:aws:sns:eu-west-1:111111111111:${logicalId(plain, plain.orchestrator.approvalTopic)}`,
      },
    });
    expect(TimeoutSeconds).toBe(36 * 3600);
    expect(aslValidator(downgradeMachine(plain)).errors).toEqual([]);
  });

  it('lets the downgrade machine publish to the approval topic and use the key only for it', () => {
    const topic = { Ref: logicalId(plain, plain.orchestrator.approvalTopic) };
    const role = logicalId(plain, plain.orchestrator.downgrade.role as never);
    const mine = statements(plain).filter((s) => s.role === role);
    expect(mine).toContainEqual({ role, Action: 'sns:Publish', Effect: 'Allow', Resource: topic });
    expect(mine.filter((s) => actions(s).some((a) => a.startsWith('kms:')))).toEqual([
      expect.objectContaining({
        Condition: { StringEquals: { 'kms:EncryptionContext:aws:sns:topicArn': topic } },
      }),
    ]);
  });

  it('is required of every event-triggered downgrade by requireDowngradeApproval', () => {
    const fn =
      approving.resources[logicalId(approving, approving.orchestrator.functions.get('starter') as never)];
    expect(fn?.Properties.Environment).toMatchObject({ Variables: { REQUIRE_DOWNGRADE_APPROVAL: 'true' } });
    const plainFn = plain.resources[logicalId(plain, plain.orchestrator.functions.get('starter') as never)];
    expect(JSON.stringify(plainFn?.Properties.Environment)).not.toContain('REQUIRE_DOWNGRADE_APPROVAL');
  });
});

describe('permissions', () => {
  it("lets only the migration machines publish to the approval topic, the upgrade's using the key only for it", () => {
    const topic = { Ref: logicalId(plain, plain.orchestrator.approvalTopic) };
    const upgradeRole = logicalId(plain, plain.orchestrator.upgrade.role as never);
    const downgradeRole = logicalId(plain, plain.orchestrator.downgrade.role as never);
    const publish = statements(plain).filter((s) => actions(s).some((a) => a.startsWith('sns:')));
    expect(publish.filter((s) => JSON.stringify(s.Resource) === JSON.stringify(topic))).toEqual([
      { role: upgradeRole, Action: 'sns:Publish', Effect: 'Allow', Resource: topic },
      { role: downgradeRole, Action: 'sns:Publish', Effect: 'Allow', Resource: topic },
    ]);
    // The other publisher, EventBridge's role, to the notification topic only.
    const notifications = { Ref: logicalId(plain, plain.orchestrator.topic) };
    expect(
      publish.filter((s) => s.role !== upgradeRole && s.role !== downgradeRole).map((s) => s.Resource),
    ).toEqual([notifications]);
    const key = statements(plain).filter(
      (s) => s.role === upgradeRole && actions(s).some((a) => a.startsWith('kms:')),
    );
    expect(key).toEqual([
      {
        role: upgradeRole,
        Action: ['kms:GenerateDataKey', 'kms:Decrypt'],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [logicalId(plain, plain.orchestrator.key as never), 'Arn'] },
        Condition: { StringEquals: { 'kms:EncryptionContext:aws:sns:topicArn': topic } },
      },
    ]);
  });
});

describe('props', () => {
  const starterEnv = (b: Built) => {
    const fn = b.resources[logicalId(b, b.orchestrator.functions.get('starter') as never)];
    return (fn?.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
  };

  it('tell the starter to require approval, and set the gate’s timeout and the machine’s', () => {
    expect(starterEnv(approving)).toMatchObject({ REQUIRE_APPROVAL: 'true' });
    expect(starterEnv(plain)).not.toHaveProperty('REQUIRE_APPROVAL');
    const { States, TimeoutSeconds } = upgradeMachine(approving);
    expect(States[S.approval]?.TimeoutSeconds).toBe(2 * 3600);
    expect(TimeoutSeconds).toBe(14 * 3600);
  });

  it('leave cdk-nag AwsSolutions with no finding unacknowledged', () => {
    expect(nagReport).toBe('');
  });
});
