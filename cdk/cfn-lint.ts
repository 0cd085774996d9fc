/**
 * cfn-lint's warnings that the stack keeps, each with its reason, as cdk-nag's acknowledgements are kept:
 * the template carries them as cfn-lint reads them (resource Metadata `cfn-lint.config.ignore_checks`), and
 * the reason stays here, one per rule. test/cdk/cfn-lint.test.ts fails on any other finding.
 */
import type { CfnResource } from 'aws-cdk-lib';

export const CFN_LINT_ACKNOWLEDGED = {
  /**
   * "dependency already enforced by a GetAtt": a Lambda function and a state machine made by the CDK depend
   * on their role explicitly as well as through its ARN, because the same DependsOn carries the role's
   * policy, which no property names and which must exist before the first invocation. The redundant half
   * changes nothing in the order CloudFormation creates them.
   */
  W3005: 'the CDK’s DependsOn on a role also referenced by GetAtt: redundant, harmless',
} as const;

export type CfnLintRule = keyof typeof CFN_LINT_ACKNOWLEDGED;

export function acknowledgeCfnLint(resource: CfnResource, rules: readonly CfnLintRule[]): void {
  resource.addMetadata('cfn-lint', { config: { ignore_checks: [...rules] } });
}
