/**
 * `npx cdk synth|deploy`: the orchestrator in a stack of its own. The VPC comes from context, by attributes
 * (no lookup, so synth works offline): `-c vpcId=vpc-… -c subnetIds=subnet-a,subnet-b -c securityGroupId=sg-…
 * -c availabilityZones=eu-west-1a,eu-west-1b`; without it the functions run outside any VPC.
 */
import { App, CfnOutput, aws_ec2 as ec2, Stack, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { STACK_OUTPUTS } from '../lib/aws/stack-outputs.ts';
import { MigrationOrchestrator, type MigrationOrchestratorProps } from './orchestrator.ts';

const app = new App();
const stack = new Stack(app, app.node.tryGetContext('stackName') ?? 'CcmMigrate', {
  description: 'ccm-migrate: migrates Kubernetes clusters from in-tree cloud providers to external CCMs',
});

function list(name: string): string[] | undefined {
  const value: unknown = app.node.tryGetContext(name);
  return typeof value === 'string' && value ? value.split(',') : undefined;
}

function network(): MigrationOrchestratorProps {
  const vpcId: unknown = app.node.tryGetContext('vpcId');
  const subnetIds = list('subnetIds');
  const securityGroupId: unknown = app.node.tryGetContext('securityGroupId');
  if (typeof vpcId !== 'string' || !subnetIds) return {};
  const vpc = ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId,
    availabilityZones: list('availabilityZones') ?? subnetIds.map((_, i) => `${stack.region}${'abc'[i]}`),
    privateSubnetIds: subnetIds,
  });
  return {
    vpc,
    vpcSubnets: { subnets: subnetIds.map((id, i) => ec2.Subnet.fromSubnetId(stack, `Subnet${i}`, id)) },
    ...(typeof securityGroupId === 'string'
      ? { securityGroups: [ec2.SecurityGroup.fromSecurityGroupId(stack, 'ClusterAccess', securityGroupId)] }
      : {}),
  };
}

const orchestrator = new MigrationOrchestrator(stack, 'CcmMigrate', network());
// What `ccm-migrate … --aws --stack-outputs F` reads from `npx cdk deploy --outputs-file F`.
new CfnOutput(stack, STACK_OUTPUTS.upgrade, { value: orchestrator.upgrade.stateMachineArn });
new CfnOutput(stack, STACK_OUTPUTS.downgrade, { value: orchestrator.downgrade.stateMachineArn });
new CfnOutput(stack, STACK_OUTPUTS.bus, { value: orchestrator.bus.eventBusName });
new CfnOutput(stack, STACK_OUTPUTS.table, { value: orchestrator.table.tableName });
new CfnOutput(stack, STACK_OUTPUTS.key, { value: orchestrator.key.keyArn });
new CfnOutput(stack, STACK_OUTPUTS.topic, { value: orchestrator.topic.topicArn });
new CfnOutput(stack, STACK_OUTPUTS.approvalTopic, { value: orchestrator.approvalTopic.topicArn });
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
