/**
 * What the CLI needs of a deployed stack, by output name: cdk/app.ts declares these outputs, and
 * `npx cdk deploy --outputs-file F` writes them as `{ "<stack>": { "<output>": "<value>" } }`.
 */
import * as z from 'zod';
import { InvalidInputError } from '../errors.ts';
import { parseInput } from '../store/run-record.ts';

export const STACK_OUTPUTS = {
  upgrade: 'UpgradeStateMachineArn',
  downgrade: 'DowngradeStateMachineArn',
  bus: 'EventBusName',
  /** For operators (docs/deploy.md): where to register clusters and encrypt their kubeconfig secrets. */
  table: 'TableName',
  key: 'KmsKeyArn',
  topic: 'NotificationTopicArn',
  /** Subscribe whoever answers approvals (and no one else: a request carries its task token). */
  approvalTopic: 'ApprovalTopicArn',
} as const;

export interface StackTarget {
  readonly upgrade?: string;
  readonly downgrade?: string;
  readonly eventBusName?: string;
  /** The run table: the run report reads a run's record (outcome, snapshot) from it. */
  readonly tableName?: string;
}

const OutputsFile = z.record(z.string(), z.record(z.string(), z.string()));

/** The stack in an outputs file that has the state machine outputs (the only one, or it is ambiguous). */
export function stackTargetFromOutputs(text: string, file: string): StackTarget {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidInputError(`${file} is not JSON (expected the file of cdk deploy --outputs-file)`);
  }
  const stacks = Object.entries(parseInput(OutputsFile, json, `stack outputs ${file}`)).filter(
    ([, outputs]) => STACK_OUTPUTS.upgrade in outputs && STACK_OUTPUTS.downgrade in outputs,
  );
  if (stacks.length !== 1) {
    throw new InvalidInputError(
      `${file} has ${stacks.length} ccm-migrate stacks (with ${STACK_OUTPUTS.upgrade} and ${STACK_OUTPUTS.downgrade}): ` +
        'keep one, or pass --state-machine-arn',
    );
  }
  const outputs = (stacks[0] as [string, Record<string, string>])[1];
  return {
    upgrade: outputs[STACK_OUTPUTS.upgrade],
    downgrade: outputs[STACK_OUTPUTS.downgrade],
    ...(outputs[STACK_OUTPUTS.bus] ? { eventBusName: outputs[STACK_OUTPUTS.bus] } : {}),
    ...(outputs[STACK_OUTPUTS.table] ? { tableName: outputs[STACK_OUTPUTS.table] } : {}),
  };
}
