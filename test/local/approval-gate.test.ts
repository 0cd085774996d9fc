/**
 * The approval gate in the real synthesized definitions (upgrade and downgrade), run by the local engine with
 * the local gate handler (lib/local/approval.ts): skipped unless the input asks for it; when asked, the run
 * waits for the answer after preflight and before the first change; a rejection, no answer in time, or
 * nobody to answer ends the run through the failure ending, never the rollback.
 */
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../../lib/aws/approval.ts';
import { ApprovalRejectedError } from '../../lib/errors.ts';
import { type Approver, approvalGateHandlers } from '../../lib/local/approval.ts';
import { type EventLog, runLocally } from '../../lib/local/engine.ts';
import { renderDefinition } from '../../lib/local/render.ts';
import { DOWNGRADE_STATES, downgradeDefinition } from '../../state-machines/downgrade.ts';
import { STEP_IDS } from '../../state-machines/steps.ts';
import { UPGRADE_STATES, upgradeDefinition } from '../../state-machines/upgrade.ts';
import { recording } from './recording.ts';

const workflow = renderDefinition(upgradeDefinition);
const S = UPGRADE_STATES;

const preflight = async (): Promise<unknown> => ({
  alreadyExternal: false,
  provider: 'aws',
  kubernetesVersion: 'v1.29.4',
  controlPlaneNodes: ['cp-1'],
  workerNodes: ['w-1', 'w-2'],
  kubeletOrder: ['cp-1', 'w-1', 'w-2'],
});
const input = (options: object) => ({ clusterId: 'demo', runId: 'r1', maxUnavailable: 1, options });

/** Runs the upgrade with the gate answered by `approve`; the steps called and the states entered. */
async function run(options: object, approve: Approver | undefined, w = workflow) {
  const { calls, handlers } = recording(STEP_IDS, { preflight });
  const entered: string[] = [];
  const result = await runLocally({
    workflow: w,
    handlers,
    taskHandlers: approvalGateHandlers(approve),
    input: input(options),
    onEvent: (e: EventLog) => {
      if (e.type === 'StateEntered' && !('index' in e && e.index !== undefined)) entered.push(e.state.name);
    },
  });
  return { result, steps: calls.map((c) => c.step), calls, entered };
}

/** What a run that ends at the gate may have called: preflight, then the failure's record, nothing else. */
function expectEndedUnchanged(r: Awaited<ReturnType<typeof run>>, error: string, cause: RegExp): void {
  expect(r.result.status).toBe('FAILED');
  expect(r.result.error?.name).toBe(error);
  expect(r.result.error?.cause).toMatch(cause);
  expect(r.steps).toEqual(['preflight', 'record-failure']);
  expect(r.calls[1]?.event.error).toMatchObject({ Error: error });
  expect(r.entered).not.toContain(S.stage);
  expect(r.entered).not.toContain(S.changedAnything);
  expect(r.entered.at(-1)).toBe(S.failed);
}

describe('the approval gate, run by the local engine', () => {
  it('is skipped when the run does not ask for approval, absent or false', async () => {
    for (const options of [{}, { requireApproval: false }]) {
      let asked = 0;
      const r = await run(options, async () => {
        asked += 1;
      });
      expect(r.result.status).toBe('SUCCEEDED');
      expect(asked).toBe(0);
      expect(r.entered).toContain(S.needsApproval);
      expect(r.entered).not.toContain(S.approval);
      expect(r.steps.slice(0, 2)).toEqual(['preflight', 'stage-ccm']);
    }
  });

  it('asks after preflight and before the first change, with the request Step Functions would publish', async () => {
    const asked: ApprovalRequest[] = [];
    let stepsWhenAsked: string[] = [];
    const { calls, handlers } = recording(STEP_IDS, { preflight });
    const result = await runLocally({
      workflow,
      handlers,
      taskHandlers: approvalGateHandlers(async (request) => {
        asked.push(request);
        stepsWhenAsked = calls.map((c) => c.step);
      }),
      input: input({ requireApproval: true }),
    });

    expect(result.status).toBe('SUCCEEDED');
    expect(stepsWhenAsked).toEqual(['preflight']);
    expect(asked).toEqual([
      {
        kind: 'ApprovalRequested',
        migration: 'upgrade',
        clusterId: 'demo',
        runId: 'r1',
        provider: 'aws',
        kubernetesVersion: 'v1.29.4',
        nodes: 3,
        taskToken: 'local',
        approve: 'ccm-migrate approve --aws --cluster-id demo --run-id r1',
        reject: 'ccm-migrate approve --aws --cluster-id demo --run-id r1 --reject --reason <why>',
      },
    ]);
    // Approved: the whole upgrade follows, its state as preflight left it (the answer is discarded).
    const steps = calls.map((c) => c.step);
    expect(steps.slice(0, 3)).toEqual(['preflight', 'stage-ccm', 'move-control-plane-node']);
    expect(steps.slice(-2)).toEqual(['verify', 'finalize']);
    expect(calls.find((c) => c.step === 'stage-ccm')?.event).toEqual({ clusterId: 'demo', runId: 'r1' });
  });

  it('ends a rejected run as failed with the reason, recording it and rolling nothing back', async () => {
    const r = await run({ requireApproval: true }, async () => {
      throw new ApprovalRejectedError('not during the freeze');
    });

    expectEndedUnchanged(r, 'ApprovalRejected', /^not during the freeze$/);
    expect(r.entered).toContain(S.approval);
  });

  it('ends a run nobody answers in time as failed (States.Timeout), rolling nothing back', async () => {
    const short = renderDefinition((scope, stepTask) =>
      upgradeDefinition(scope, stepTask, { approvalTimeout: Duration.seconds(1) }),
    );
    expect(
      (short.definition.States as Record<string, { TimeoutSeconds?: number }>)[S.approval],
    ).toMatchObject({
      TimeoutSeconds: 1,
    });
    const started = Date.now();
    const r = await run({ requireApproval: true }, () => new Promise<void>(() => undefined), short);

    expectEndedUnchanged(r, 'States.Timeout', /./);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('ends a run that requires approval as InvalidInput when nothing here can answer it', async () => {
    const r = await run({ requireApproval: true }, undefined);

    expectEndedUnchanged(r, 'InvalidInput', /run r1 of cluster demo requires approval.*--require-approval/);
  });
});

describe('the approval gate of a downgrade, run by the local engine', () => {
  const downgrade = renderDefinition(downgradeDefinition);
  const D = DOWNGRADE_STATES;
  const downgradePreflight = async (): Promise<unknown> => ({
    alreadyInTree: false,
    provider: 'aws',
    kubernetesVersion: 'v1.29.4',
    sourceRunId: 'up-1',
    controlPlaneNodes: ['cp-1'],
    kubeletOrder: ['cp-1', 'w-1'],
    leaderMigration: { enabled: false, reason: 'one control-plane node' },
  });

  async function runDowngrade(options: object, approve: Approver) {
    const asked: ApprovalRequest[] = [];
    const { calls, handlers } = recording(STEP_IDS, { 'downgrade-preflight': downgradePreflight });
    const result = await runLocally({
      workflow: downgrade,
      handlers,
      taskHandlers: approvalGateHandlers(async (request) => {
        asked.push(request);
        await approve(request);
      }),
      input: input(options),
    });
    return { result, asked, steps: calls.map((c) => c.step) };
  }

  it('is off by default: a downgrade that does not ask goes on unasked', async () => {
    const r = await runDowngrade({}, async () => undefined);
    expect(r.result.status).toBe('SUCCEEDED');
    expect(r.asked).toEqual([]);
    expect(r.steps[1]).toBe('restore-kubelet');
  });

  it('asks after preflight and before the first restore, with the command that answers a downgrade', async () => {
    const r = await runDowngrade({ requireApproval: true }, async () => undefined);
    expect(r.result.status).toBe('SUCCEEDED');
    expect(r.asked).toEqual([
      expect.objectContaining({
        migration: 'downgrade',
        provider: 'aws',
        nodes: 2,
        approve: 'ccm-migrate approve --aws --downgrade --cluster-id demo --run-id r1',
      }),
    ]);
    expect(r.steps.slice(0, 2)).toEqual(['downgrade-preflight', 'restore-kubelet']);
  });

  it('ends a rejected downgrade as failed before any change', async () => {
    const r = await runDowngrade({ requireApproval: true }, async () => {
      throw new ApprovalRejectedError('not during the freeze');
    });
    expect(r.result.status).toBe('FAILED');
    expect(r.result.error?.name).toBe('ApprovalRejected');
    expect(r.steps).toEqual(['downgrade-preflight', 'record-failure']);
    expect(D.approval).toBe(S.approval);
  });
});
