/**
 * The orchestrator in a test stack, synthesized in-process without bundling (the functions' assets are
 * not built: `aws:cdk:bundling-stacks` empty), with cdk-nag's AwsSolutions checks registered if asked (they
 * run at synth and fail it on any unacknowledged finding).
 */
import { App, Stack, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { MigrationOrchestrator } from '../../cdk/orchestrator.ts';

export function testStack(opts: { nag?: boolean } = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test', { env: { account: '111111111111', region: 'eu-west-1' } });
  const orchestrator = new MigrationOrchestrator(stack, 'CcmMigrate');
  if (opts.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, orchestrator };
}
