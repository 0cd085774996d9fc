import { describe, expect, it } from 'vitest';
import { NotReadyYetError, PreflightFailedError, VerificationFailedError } from '../../lib/errors.ts';
import { runLocally } from '../../lib/local/engine.ts';
import { renderDefinition } from '../../lib/local/render.ts';
import { STEP_IDS } from '../../state-machines/steps.ts';
import { UPGRADE_STATES, upgradeDefinition } from '../../state-machines/upgrade.ts';
import { recording } from './recording.ts';

const workflow = renderDefinition(upgradeDefinition);

/** Handlers that record each call and answer from `answers` (default: an empty object). */

const input = { clusterId: 'demo', runId: 'r1', maxUnavailable: 2, options: {} };
const preflight = async (): Promise<unknown> => ({
  alreadyExternal: false,
  controlPlaneNodes: ['cp-1', 'cp-2', 'cp-3'],
  workerNodes: ['w-1', 'w-2', 'w-3'],
  kubeletOrder: ['cp-1', 'cp-2', 'cp-3', 'w-1', 'w-2', 'w-3'],
});

describe('the upgrade definition, run by the local engine', () => {
  it('runs the steps in order, control-plane nodes one at a time, then every kubelet, each node checked after its flip, control plane first', async () => {
    const { calls, handlers } = recording(STEP_IDS, { preflight });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('SUCCEEDED');
    const order = calls.map((c) => (c.event.node ? `${c.step}:${c.event.node}` : c.step));
    expect(order.slice(0, 5)).toEqual([
      'preflight',
      'stage-ccm',
      'move-control-plane-node:cp-1',
      'move-control-plane-node:cp-2',
      'move-control-plane-node:cp-3',
    ]);
    expect(order[5]).toBe('activate-ccm');
    const kubelets = order.slice(6, 18);
    const flips = kubelets.filter((c) => c.startsWith('flip-kubelet:'));
    // maxUnavailable 2: the Map starts items in order, so every control-plane kubelet starts before a worker's.
    expect(flips.slice(0, 3)).toEqual(['flip-kubelet:cp-1', 'flip-kubelet:cp-2', 'flip-kubelet:cp-3']);
    expect(flips.slice(3).sort()).toEqual(['flip-kubelet:w-1', 'flip-kubelet:w-2', 'flip-kubelet:w-3']);
    // The CCM initialises each node again right after its own flip, in the flip's slot, before it gets its
    // lifecycle controller.
    for (const node of ['cp-1', 'cp-2', 'cp-3', 'w-1', 'w-2', 'w-3']) {
      const verified = kubelets.indexOf(`verify-node:${node}`);
      expect(verified, node).toBeGreaterThan(kubelets.indexOf(`flip-kubelet:${node}`));
    }
    // A slot holds its node until the check is done: the third flip waits for a node's check.
    const firstChecked = Math.min(kubelets.indexOf('verify-node:cp-1'), kubelets.indexOf('verify-node:cp-2'));
    expect(kubelets.indexOf('flip-kubelet:cp-3')).toBeGreaterThan(firstChecked);
    expect(order.slice(18)).toEqual(['activate-ccm', 'verify', 'finalize']);
    expect(calls.filter((c) => c.step === 'activate-ccm').map((c) => c.event.nodeLifecycle)).toEqual([
      undefined,
      true,
    ]);
    expect(calls.every((c) => c.event.clusterId === 'demo' && c.event.runId === 'r1')).toBe(true);
    // What each step needs to pre-start the agents of later turns (lib/steps/prestart.ts): the CCM's start
    // the first batch, each move and flip the node that takes its slot next.
    const kubeletOrder = ['cp-1', 'cp-2', 'cp-3', 'w-1', 'w-2', 'w-3'];
    const eventOf = (step: string, node?: string) =>
      calls.find((c) => c.step === step && c.event.node === node)?.event;
    expect(eventOf('activate-ccm')).toMatchObject({ order: kubeletOrder, lookahead: 2 });
    expect(eventOf('move-control-plane-node', 'cp-2')).toMatchObject({
      order: ['cp-1', 'cp-2', 'cp-3'],
      lookahead: 1,
    });
    expect(eventOf('flip-kubelet', 'w-1')).toMatchObject({ order: kubeletOrder, lookahead: 2 });
  });

  it('runs the leader migration phases when preflight chose it: KCMs join the lease, the CCM starts, then the move', async () => {
    const { calls, handlers } = recording(STEP_IDS, {
      preflight: async () => ({
        ...((await preflight()) as object),
        leaderMigration: { enabled: true, reason: 'HA' },
      }),
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('SUCCEEDED');
    const order = calls.map((c) =>
      [c.step, c.event.node, c.event.phase, c.event.leaderMigration].filter((x) => x !== undefined).join(':'),
    );
    expect(order.slice(0, 10)).toEqual([
      'preflight',
      'stage-ccm',
      'move-control-plane-node:cp-1:enable-leader-migration',
      'move-control-plane-node:cp-2:enable-leader-migration',
      'move-control-plane-node:cp-3:enable-leader-migration',
      'activate-ccm:true',
      'move-control-plane-node:cp-1',
      'move-control-plane-node:cp-2',
      'move-control-plane-node:cp-3',
      'activate-ccm',
    ]);
    expect(order.slice(-2)).toEqual(['verify', 'finalize']);
  });

  it('goes straight to verification when the cluster is already external', async () => {
    const external = async () => ({ alreadyExternal: true, kubeletOrder: ['cp-1'] });
    const { calls, handlers } = recording(STEP_IDS, { preflight: external });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.step)).toEqual([
      'preflight',
      'verify-node',
      'activate-ccm',
      'verify',
      'finalize',
    ]);
  });

  it('counts the states entered, a Map’s inner ones too, but not its iterations (Step Functions bills no inline iteration)', async () => {
    const external = async () => ({ alreadyExternal: true, kubeletOrder: ['cp-1', 'w-1'] });
    const { handlers } = recording(STEP_IDS, { preflight: external });

    const result = await runLocally({ workflow, handlers, input });

    // Check the cluster, Is it already external?, the node checks' Map and its Task for each of 2 nodes,
    // the full controller set, Verify, Record the result, Migrated.
    expect(result.transitions).toBe(9);
  });

  it('retries a step that is not ready yet and counts each retry as a transition', async () => {
    let attempts = 0;
    const { handlers } = recording(STEP_IDS, {
      preflight,
      'activate-ccm': async (event) => {
        if ((event as { nodeLifecycle?: boolean }).nodeLifecycle) return {};
        attempts += 1;
        if (attempts < 3) throw new NotReadyYetError('CCM not Ready');
        return {};
      },
    });
    const { handlers: plain } = recording(STEP_IDS, { preflight });

    const retried = await runLocally({
      workflow,
      handlers,
      input,
      retryIntervalOverrides: { [UPGRADE_STATES.activate]: 0 },
    });
    const straight = await runLocally({ workflow, handlers: plain, input });

    expect(retried.status).toBe('SUCCEEDED');
    expect(attempts).toBe(3);
    expect(retried.transitions - straight.transitions).toBe(2);
  });

  it('records the failure and fails the run with the step error name when a step fails', async () => {
    const { calls, handlers } = recording(STEP_IDS, {
      preflight: async () => {
        throw new PreflightFailedError('node w-2 has no instance');
      },
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('FAILED');
    expect(result.error?.name).toBe('PreflightFailed');
    expect(calls.map((c) => c.step)).toEqual(['preflight', 'record-failure']);
    expect(calls[1]?.event.error).toEqual({ Error: 'PreflightFailed', Cause: 'node w-2 has no instance' });
  });

  it('rolls back what the run changed, in reverse order, when a step after preflight fails', async () => {
    const { calls, handlers } = recording(STEP_IDS, {
      preflight,
      'activate-ccm': async () => {
        throw new VerificationFailedError('CCM never led');
      },
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('FAILED');
    expect(result.error).toEqual({ name: 'RolledBack', cause: 'CCM never led' });
    const order = calls.map((c) => (c.event.node ? `${c.step}:${c.event.node}` : c.step));
    const rollback = order.slice(order.indexOf('activate-ccm') + 1);
    expect(rollback.slice(0, 6).sort()).toEqual(
      ['cp-1', 'cp-2', 'cp-3', 'w-1', 'w-2', 'w-3'].map((n) => `restore-kubelet:${n}`),
    );
    expect(rollback.slice(6)).toEqual([
      'stop-ccm',
      'restore-control-plane-node:cp-1',
      'restore-control-plane-node:cp-2',
      'restore-control-plane-node:cp-3',
      'remove-ccm',
      'record-rollback',
    ]);
    expect(calls.filter((c) => c.step === 'restore-kubelet').every((c) => c.event.sourceRunId === 'r1')).toBe(
      true,
    );
    // Each restore pre-starts the agent of the node that takes its slot next (lib/steps/prestart.ts).
    const restoreOf = (step: string, node: string) =>
      calls.find((c) => c.step === step && c.event.node === node)?.event;
    expect(restoreOf('restore-kubelet', 'w-1')).toMatchObject({
      order: ['cp-1', 'cp-2', 'cp-3', 'w-1', 'w-2', 'w-3'],
      lookahead: 2,
    });
    expect(restoreOf('restore-control-plane-node', 'cp-1')).toMatchObject({
      order: ['cp-1', 'cp-2', 'cp-3'],
      lookahead: 1,
    });
  });

  it('rolls nothing back for a cluster that was already external', async () => {
    const { calls, handlers } = recording(STEP_IDS, {
      preflight: async () => ({ alreadyExternal: true, kubeletOrder: ['cp-1'] }),
      verify: async () => {
        throw new VerificationFailedError('no CCM leads');
      },
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.error?.name).toBe('VerificationFailed');
    expect(calls.map((c) => c.step)).toEqual([
      'preflight',
      'verify-node',
      'activate-ccm',
      'verify',
      'record-failure',
    ]);
  });
});
