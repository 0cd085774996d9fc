/**
 * The stack key's policy: an AWS service may use the key only where a condition ties it to this stack's use
 * (SNS's encryption context naming the notification topic, this account's alarms), never on the service's
 * word alone; EventBridge publishes through a role only this account's rules on the bus can pass.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { testStack } from './stack.ts';

interface Statement {
  readonly Principal?: { Service?: string; AWS?: unknown };
  readonly Action: string | string[];
  readonly Condition?: Record<string, Record<string, unknown>>;
}

let services: Statement[] = [];
let topic: unknown;
let bus: string;
let notifyRole: { Properties: Record<string, unknown> } | undefined;

beforeAll(() => {
  const { stack, orchestrator } = testStack();
  const keyId = stack.getLogicalId(orchestrator.key.node.defaultChild as never);
  const resources = Template.fromStack(stack).toJSON().Resources as Record<
    string,
    { Properties: { KeyPolicy?: { Statement: Statement[] }; TopicName?: string } & Record<string, unknown> }
  >;
  const statements = resources[keyId]?.Properties.KeyPolicy?.Statement ?? [];
  services = statements.filter((s) => s.Principal?.Service !== undefined);
  // The topic's ARN as the key policy spells it (by name: a reference would make a cycle).
  const name =
    resources[stack.getLogicalId(orchestrator.topic.node.defaultChild as never)]?.Properties.TopicName;
  expect(name).toMatch(/notifications$/);
  bus = stack.getLogicalId(orchestrator.bus.node.defaultChild as never);
  const role = orchestrator.node.findChild('NotifyRole');
  notifyRole = resources[stack.getLogicalId(role.node.defaultChild as never)];
  topic = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:sns:eu-west-1:111111111111:${name}`]] };
});

const of = (service: string) => services.filter((s) => s.Principal?.Service === service);

describe('the key policy', () => {
  it('lets no service principal use the key without a condition', () => {
    expect(services.length).toBeGreaterThan(0);
    expect(services.filter((s) => s.Condition === undefined)).toEqual([]);
  });

  it("lets EventBridge publish only as a role that only this account's rules on the bus can pass", () => {
    expect(of('events.amazonaws.com')).toEqual([]);
    const trust = notifyRole?.Properties.AssumeRolePolicyDocument as { Statement: Statement[] };
    expect(trust.Statement).toEqual([
      expect.objectContaining({
        Principal: { Service: 'events.amazonaws.com' },
        Condition: {
          StringEquals: { 'aws:SourceAccount': '111111111111' },
          ArnLike: {
            'aws:SourceArn': {
              'Fn::Join': [
                '',
                [
                  'arn:',
                  { Ref: 'AWS::Partition' },
                  ':events:eu-west-1:111111111111:rule/',
                  { Ref: bus },
                  '/*',
                ],
              ],
            },
          },
        },
      }),
    ]);
  });

  it("lets CloudWatch use it only for the notification topic, on behalf of this account's alarms", () => {
    expect(of('cloudwatch.amazonaws.com')).toEqual([
      expect.objectContaining({
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Condition: {
          StringEquals: {
            'kms:EncryptionContext:aws:sns:topicArn': topic,
            'aws:SourceAccount': '111111111111',
          },
          ArnLike: {
            'aws:SourceArn': {
              'Fn::Join': [
                '',
                ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:eu-west-1:111111111111:alarm:*'],
              ],
            },
          },
        },
      }),
    ]);
  });

  it('names no service but CloudWatch, whose alarms publish to the topic', () => {
    expect([...new Set(services.map((s) => s.Principal?.Service))]).toEqual(['cloudwatch.amazonaws.com']);
  });
});
