/** The orchestrator's template, synthesized in-process: resources, least privilege, rules, ASL and cdk-nag. */

import { createRequire } from 'node:module';
import { App, Duration, Stack, type aws_stepfunctions as sfn } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_IDS, talksToCluster } from '../../cdk/bundling.ts';
import { MigrationOrchestrator } from '../../cdk/orchestrator.ts';
import {
  installedPowertools,
  POWERTOOLS_LAYER_PARAMETER,
  POWERTOOLS_PACKAGES,
  POWERTOOLS_VERSION,
} from '../../cdk/powertools-layer.ts';
import { DRIFT_STEP_IDS } from '../../state-machines/steps.ts';
import { testStack } from './stack.ts';

// asl-validator ships no types: its call signature, as documented.
const aslValidator = createRequire(import.meta.url)('asl-validator') as (definition: unknown) => {
  isValid: boolean;
  errors: unknown[];
};

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

let template: Template;
let resources: Resources;
let built: ReturnType<typeof testStack>;

beforeAll(() => {
  built = testStack();
  template = Template.fromStack(built.stack);
  resources = template.toJSON().Resources as Resources;
});

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
  built.stack.getLogicalId(construct.node.defaultChild as never);

/** Every statement of the policies attached to a role. */
function statementsOf(
  roleId: string,
): Array<{ Action: string | string[]; Resource: unknown; Condition?: unknown }> {
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles as Array<{ Ref: string }>).some((r) => r.Ref === roleId))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: never[] }).Statement);
}
const actions = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: { Resource: unknown }) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

function roleOf(id: (typeof FUNCTION_IDS)[number]): string {
  const fn = built.orchestrator.functions.get(id);
  if (!fn) throw new Error(`no function ${id}`);
  return built.stack.getLogicalId(fn.role?.node.defaultChild as never);
}

describe('functions', () => {
  it('has one Node 22 arm64 function per step and event handler, traced, with the table in its environment', () => {
    const fns = ofType('AWS::Lambda::Function').filter(([, r]) => r.Properties.Runtime);
    expect(fns).toHaveLength(FUNCTION_IDS.length);
    for (const [, f] of fns) {
      expect(f.Properties.Runtime).toBe('nodejs22.x');
      expect(f.Properties.Architectures).toEqual(['arm64']);
      expect(f.Properties.TracingConfig).toEqual({ Mode: 'Active' });
      expect(f.Properties.Handler).toBe('index.handler');
      expect((f.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toHaveProperty(
        'TABLE_NAME',
      );
    }
  });

  it('loads Powertools from the layer of the installed release, by its public SSM parameter', () => {
    // Every package the functions import from it, at the one release the parameter names.
    for (const pkg of POWERTOOLS_PACKAGES) expect(installedPowertools(pkg), pkg).toBe(POWERTOOLS_VERSION);
    expect(POWERTOOLS_LAYER_PARAMETER).toBe(
      `/aws/service/powertools/typescript/generic/all/${POWERTOOLS_VERSION}`,
    );
    const parameters = Object.entries(
      template.toJSON().Parameters as Record<string, { Type: string; Default: string }>,
    ).filter(([, p]) => p.Default === POWERTOOLS_LAYER_PARAMETER);
    expect(parameters).toHaveLength(1);
    expect(parameters[0]?.[1].Type).toBe('AWS::SSM::Parameter::Value<String>');
    const fns = ofType('AWS::Lambda::Function').filter(([, r]) => r.Properties.Runtime);
    for (const [, f] of fns) expect(f.Properties.Layers).toEqual([{ Ref: parameters[0]?.[0] }]);
  });

  it('grants the secret read (on the prefix) and KMS decrypt (through Secrets Manager) only to cluster steps', () => {
    for (const id of FUNCTION_IDS) {
      const statements = statementsOf(roleOf(id));
      const secretRead = statements.filter((s) => actions(s).includes('secretsmanager:GetSecretValue'));
      if (!talksToCluster(id)) {
        expect(secretRead, id).toEqual([]);
        continue;
      }
      expect(secretRead, id).toHaveLength(1);
      expect(JSON.stringify(secretRead[0]?.Resource)).toContain(':secret:ccm-migrate/clusters/*');
      const decrypt = statements.find((s) => actions(s).includes('kms:Decrypt') && s.Condition);
      expect(JSON.stringify(decrypt?.Condition)).toContain('secretsmanager.eu-west-1.amazonaws.com');
    }
  });

  it('lets only the starter start executions, on exactly the two machines, and only it, run-ended and publish-drift put events', () => {
    const machines = [logicalId(built.orchestrator.upgrade), logicalId(built.orchestrator.downgrade)];
    for (const id of FUNCTION_IDS) {
      const statements = statementsOf(roleOf(id));
      const start = statements.filter((s) => actions(s).includes('states:StartExecution'));
      const put = statements.filter((s) => actions(s).includes('events:PutEvents'));
      if (id === 'starter') {
        expect(
          start
            .flatMap(resourcesOf)
            .map((r) => (r as { Ref: string }).Ref)
            .sort(),
        ).toEqual([...machines].sort());
      } else {
        expect(start, id).toEqual([]);
      }
      expect(put.length > 0, id).toBe(['starter', 'run-ended', 'publish-drift'].includes(id));
      for (const s of put) expect(JSON.stringify(s.Resource)).toContain(logicalId(built.orchestrator.bus));
    }
  });

  it("names a resource in every statement except X-Ray and the machines' log delivery, which take none", () => {
    // AWS documents these actions as resource-less (vended logs delivery, X-Ray segments).
    const LOG_DELIVERY =
      /^logs:(\w+LogDelivery|ListLogDeliveries|PutResourcePolicy|DescribeResourcePolicies|DescribeLogGroups)$/;
    const wildcards = ofType('AWS::IAM::Policy').flatMap(([id, p]) =>
      (p.Properties.PolicyDocument as { Statement: never[] }).Statement.filter((s) =>
        resourcesOf(s).includes('*'),
      ).flatMap((s) => actions(s).map((a) => ({ id, a }))),
    );
    expect(wildcards.length).toBeGreaterThan(0);
    for (const { id, a } of wildcards) {
      const machineRole = id.includes('Upgrade') || id.includes('Downgrade') || id.includes('Drift');
      expect(a.startsWith('xray:') || (machineRole && LOG_DELIVERY.test(a)), `${id}: ${a}`).toBe(true);
    }
  });
});

describe('drift', () => {
  it('gives the drift functions read-only table access (remediate-drift, which records its run, read-write), and the migration functions read-write', () => {
    const writes = (id: (typeof FUNCTION_IDS)[number]) =>
      statementsOf(roleOf(id)).some((s) => actions(s).includes('dynamodb:PutItem'));
    const reads = (id: (typeof FUNCTION_IDS)[number]) =>
      statementsOf(roleOf(id)).some((s) => actions(s).includes('dynamodb:Query'));
    for (const id of DRIFT_STEP_IDS) {
      expect(writes(id), id).toBe(id === 'remediate-drift');
      expect(reads(id), id).toBe(true);
    }
    expect(writes('preflight')).toBe(true);
    // Only check-drift and remediate-drift reach clusters: the secret grant (asserted above for every
    // function) and its env.
    expect(DRIFT_STEP_IDS.filter((id) => talksToCluster(id))).toEqual(['check-drift', 'remediate-drift']);
    const env = (id: (typeof FUNCTION_IDS)[number]) => {
      const fn = resources[logicalId(built.orchestrator.functions.get(id) as never)];
      return (fn?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables;
    };
    expect(env('check-drift')).toMatchObject({ KUBECONFIG_SECRET_PREFIX: 'ccm-migrate/clusters/' });
    expect(env('remediate-drift')).toMatchObject({ KUBECONFIG_SECRET_PREFIX: 'ccm-migrate/clusters/' });
    expect(env('publish-drift')).toHaveProperty('EVENT_BUS_NAME');
    expect(env('list-clusters')).not.toHaveProperty('EVENT_BUS_NAME');
    expect(env('list-clusters')).not.toHaveProperty('KUBECONFIG_SECRET_PREFIX');
  });

  it('runs each drift Task on its own drift function, the clusters in a Distributed Map', () => {
    const cfn = built.orchestrator.drift.node.defaultChild as sfn.CfnStateMachine;
    const text = JSON.stringify(built.stack.resolve(cfn.definitionString));
    for (const id of DRIFT_STEP_IDS) {
      expect(text, id).toContain(logicalId(built.orchestrator.functions.get(id) as never));
    }
    expect(text).toContain('DISTRIBUTED');
    expect(text).toContain('MaxConcurrencyPath');
  });

  it('starts the drift machine every 15 minutes with a shallow check, from a role that may do only that', () => {
    const schedules = ofType('AWS::Scheduler::Schedule');
    expect(schedules).toHaveLength(1);
    const props = schedules[0]?.[1].Properties as {
      ScheduleExpression: string;
      State?: string;
      Target: { Arn: unknown; RoleArn: { 'Fn::GetAtt': [string, string] }; Input: string };
    };
    expect(props.ScheduleExpression).toBe('rate(15 minutes)');
    expect(props.Target.Arn).toEqual({ Ref: logicalId(built.orchestrator.drift) });
    expect(JSON.parse(props.Target.Input)).toEqual({
      runId: '<aws.scheduler.execution-id>',
      depth: 'shallow',
      maxConcurrency: 10,
    });
    const role = props.Target.RoleArn['Fn::GetAtt'][0];
    const statements = statementsOf(role);
    expect(statements.flatMap(actions)).toEqual(['states:StartExecution']);
    expect(statements.flatMap(resourcesOf)).toEqual([{ Ref: logicalId(built.orchestrator.drift) }]);
    // Only the scheduler may take the role.
    expect(JSON.stringify(resources[role]?.Properties.AssumeRolePolicyDocument)).toContain(
      'scheduler.amazonaws.com',
    );
  });

  it('takes the rate and concurrency from props, and adds a deep schedule when asked', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Rated', { env: { account: '111111111111', region: 'eu-west-1' } });
    new MigrationOrchestrator(stack, 'CcmMigrate', {
      driftRate: Duration.hours(1),
      driftMaxConcurrency: 50,
      deepDriftRate: Duration.days(1),
    });
    const schedules = Object.values(Template.fromStack(stack).findResources('AWS::Scheduler::Schedule'));
    const inputs = schedules.map((s) => [
      s.Properties.ScheduleExpression,
      JSON.parse(s.Properties.Target.Input),
    ]);
    expect(inputs).toEqual([
      ['rate(1 hour)', expect.objectContaining({ depth: 'shallow', maxConcurrency: 50 })],
      ['rate(1 day)', expect.objectContaining({ depth: 'deep', maxConcurrency: 50 })],
    ]);
  });
});

describe('data and state machines', () => {
  it('keeps runs in an on-demand, point-in-time-recovered, KMS-encrypted table keyed pk/sk', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: Match.anyValue() },
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    });
  });

  it('runs the three workflows as Standard machines, logging ERROR without data, traced, with their timeouts', () => {
    const machines = ofType('AWS::StepFunctions::StateMachine');
    expect(machines).toHaveLength(3);
    for (const [, m] of machines) {
      expect(m.Properties.StateMachineType).toBe('STANDARD');
      expect(m.Properties.TracingConfiguration).toEqual({ Enabled: true });
      expect(m.Properties.LoggingConfiguration).toMatchObject({
        Level: 'ERROR',
        IncludeExecutionData: false,
      });
    }
  });

  it('has definitions that asl-validator accepts, 12 h for a migration (+ the approval wait) and 1 h for a drift run', () => {
    for (const [machine, hours] of [
      // A migration may wait up to the approval timeout (24 h) before its 12 h of work.
      [built.orchestrator.upgrade, 36],
      [built.orchestrator.downgrade, 36],
      [built.orchestrator.drift, 1],
    ] as const) {
      const cfn = machine.node.defaultChild as sfn.CfnStateMachine;
      const resolved = built.stack.resolve(cfn.definitionString) as { 'Fn::Join': [string, unknown[]] };
      // Tokens (function ARNs) become placeholder ARNs of the right shape.
      const text = resolved['Fn::Join'][1]
        .map((part) =>
          typeof part === 'string'
            ? part
            : JSON.stringify(part) === JSON.stringify({ Ref: 'AWS::Partition' })
              ? 'aws'
              : 'arn:aws:lambda:eu-west-1:111111111111:function:placeholder',
        )
        .join(resolved['Fn::Join'][0]);
      const definition = JSON.parse(text) as { TimeoutSeconds: number; States: object };
      const { isValid, errors } = aslValidator(definition);
      expect(errors).toEqual([]);
      expect(isValid).toBe(true);
      expect(definition.TimeoutSeconds).toBe(hours * 3600);
    }
  });
});

describe('rules', () => {
  it('sends MigrationRequested on our bus to the starter, and our executions ending on the default bus to run-ended', () => {
    const rules = ofType('AWS::Events::Rule').map(([, r]) => r.Properties);
    const requested = rules.find((r) => JSON.stringify(r.EventPattern).includes('MigrationRequested'));
    expect(requested?.EventPattern).toEqual({
      source: ['ccm-migrate'],
      'detail-type': ['MigrationRequested'],
      detail: { kind: ['upgrade', 'downgrade'] },
    });
    expect(requested?.EventBusName).toBeDefined();
    expect(JSON.stringify(requested?.Targets)).toContain(
      built.stack.getLogicalId(built.orchestrator.functions.get('starter')?.node.defaultChild as never),
    );

    const ended = rules.find((r) => JSON.stringify(r.EventPattern).includes('aws.states'));
    expect(ended?.EventBusName).toBeUndefined();
    const pattern = ended?.EventPattern as { detail: { status: string[]; stateMachineArn: unknown[] } };
    expect(pattern.detail.status).toEqual(['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED']);
    expect(pattern.detail.stateMachineArn).toHaveLength(2);
    expect(JSON.stringify(ended?.Targets)).toContain(
      built.stack.getLogicalId(built.orchestrator.functions.get('run-ended')?.node.defaultChild as never),
    );
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('has no finding left unacknowledged', () => {
    // The plugins run at synth and fail it with a report of every unacknowledged finding.
    const { app } = testStack({ nag: true });
    let report = '';
    try {
      app.synth();
    } catch (err) {
      report = (err as Error).message;
    }
    expect(report).toBe('');
  });
});
