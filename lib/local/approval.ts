/**
 * The migrations' approval gate in local mode. The gate's Task gets the request Step Functions would publish
 * (lib/aws/approval.ts) and hands it to an `Approver` in-process instead of waiting for a token: resolving
 * lets the run go on, throwing (ApprovalRejectedError) ends it as the gate's Catch ends a rejection on AWS.
 */
import { APPROVAL_STATES } from '../../state-machines/approval-gate.ts';
import { APPROVED, type ApprovalRequest, ApprovalTaskParametersSchema } from '../aws/approval.ts';
import { InvalidInputError } from '../errors.ts';
import { parseInput } from '../store/run-record.ts';
import type { StepHandler } from './engine.ts';

/** Answers an approval request: resolves to approve, throws to reject (the error is the run's). */
export type Approver = (request: ApprovalRequest) => Promise<void>;

/** The gate's local handler, by state name; without an approver a run that requires approval cannot go on. */
export function approvalGateHandlers(approve: Approver | undefined): Record<string, StepHandler> {
  return {
    [APPROVAL_STATES.approval]: async (parameters) => {
      const { Message: request } = parseInput(ApprovalTaskParametersSchema, parameters, 'approval request');
      if (!approve) {
        throw new InvalidInputError(
          `run ${request.runId} of cluster ${request.clusterId} requires approval and nothing here can ` +
            'answer it: run at a terminal, pass --yes, or leave out --require-approval',
        );
      }
      await approve(request);
      return APPROVED;
    },
  };
}
