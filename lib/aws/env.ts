/**
 * What a Lambda function learns from its environment (set by cdk/orchestrator.ts), parsed once. A missing
 * variable is a deployment error, named here rather than as an undefined deep inside a call.
 */
import * as z from 'zod';
import { parseInput } from '../store/run-record.ts';

/** Environment variable names, shared with the stack that sets them. */
export const ENV = {
  tableName: 'TABLE_NAME',
  kubeconfigSecretPrefix: 'KUBECONFIG_SECRET_PREFIX',
  eventBusName: 'EVENT_BUS_NAME',
  upgradeStateMachineArn: 'UPGRADE_STATE_MACHINE_ARN',
  downgradeStateMachineArn: 'DOWNGRADE_STATE_MACHINE_ARN',
  agentImage: 'AGENT_IMAGE',
  /** `true`: every upgrade the starter starts waits for approval (the construct's `requireApproval`). */
  requireApproval: 'REQUIRE_APPROVAL',
  /** `true`: every downgrade the starter starts waits for approval (`requireDowngradeApproval`). */
  requireDowngradeApproval: 'REQUIRE_DOWNGRADE_APPROVAL',
} as const;

/** Where a cluster's kubeconfig lives in Secrets Manager: `<prefix><clusterId>`. */
export const DEFAULT_KUBECONFIG_SECRET_PREFIX = 'ccm-migrate/clusters/';

const Present = z.string().min(1);

/** The one variable `name` of `env`, or InvalidInputError naming it. */
export function envVar(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return parseInput(Present, env[name], `environment variable ${name}`);
}
