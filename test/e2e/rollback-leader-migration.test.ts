/**
 * An upgrade's rollback hands the cloud controllers back by leader migration once the CCM ran Ready under
 * leader migration (ADR 0004): the CCM keeps the cloud loops while every kube-controller-manager comes back
 * in-tree, so there is never a window with none but a lease's expiry. Before that (a CCM that never ran, or
 * did not start) the rollback takes the plain way: it cannot lean on that CCM.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AgentFailedError, NotReadyYetError, VerificationFailedError } from '../../lib/errors.ts';
import { type EventLog, runLocally } from '../../lib/local/engine.ts';
import { renderDefinition } from '../../lib/local/render.ts';
import type { UpgradeInput } from '../../lib/steps/schemas.ts';
import type { Fault } from '../../lib/twin/spec.ts';
import { DOWNGRADE_STATES, downgradeDefinition } from '../../state-machines/downgrade.ts';
import { WAIT_FOR_CLUSTER } from '../../state-machines/retry-policies.ts';
import { STEP_IDS } from '../../state-machines/steps.ts';
import { UPGRADE_STATES, upgradeDefinition } from '../../state-machines/upgrade.ts';
import { recording } from '../local/recording.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { HANDOVER_GAP_MS, observeControllers, realishHaSpec } from './controllers.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const S = UPGRADE_STATES;

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

/** The hand-back's own states, in the order they run. */
const HAND_BACK: string[] = [
  S.rollbackCcmMigrating,
  S.rollbackControlPlaneMigrating,
  S.rollbackStopCcmMigrating,
  S.rollbackMigrationOff,
  S.rollbackRemoveCcm,
];
/** The plain way back's states after the kubelets. */
const PLAIN: string[] = [S.rollbackStopCcm, S.rollbackControlPlane, S.rollbackRemoveCcm];

describe('the rollback definition chooses its way back from where the upgrade failed', () => {
  const workflow = renderDefinition(upgradeDefinition);
  const input = { clusterId: 'demo', runId: 'r1', maxUnavailable: 1, options: {} };
  const preflightAnswer = (leaderMigration: boolean) => async (): Promise<unknown> => ({
    alreadyExternal: false,
    controlPlaneNodes: ['cp-1', 'cp-2'],
    workerNodes: ['w-1'],
    kubeletOrder: ['cp-1', 'cp-2', 'w-1'],
    ...(leaderMigration ? { leaderMigration: { enabled: true, reason: 'HA' } } : {}),
  });
  type Event = Record<string, unknown>;
  const handBackOrder = [
    'activate-ccm:hand-back',
    'restore-control-plane-node:cp-1:migrating',
    'restore-control-plane-node:cp-2:migrating',
    'stop-ccm',
    'restore-control-plane-node:cp-1',
    'restore-control-plane-node:cp-2',
    'remove-ccm',
    'record-rollback',
  ];
  const plainOrder = [
    'stop-ccm',
    'restore-control-plane-node:cp-1',
    'restore-control-plane-node:cp-2',
    'remove-ccm',
    'record-rollback',
  ];

  it.each([
    [
      'a KCM joining the lease (phase 1)',
      true,
      'move-control-plane-node',
      (e: Event) => e.phase !== undefined,
      plainOrder,
    ],
    [
      'the CCM starting under the lease (phase 2)',
      true,
      'activate-ccm',
      (e: Event) => e.leaderMigration === true,
      plainOrder,
    ],
    [
      'a KCM moving external (phase 3)',
      true,
      'move-control-plane-node',
      (e: Event) => e.phase === undefined,
      handBackOrder,
    ],
    [
      'the CCM rolling out without the flag (phase 4)',
      true,
      'activate-ccm',
      (e: Event) => e.leaderMigration === undefined && e.handBack === undefined,
      handBackOrder,
    ],
    ['a kubelet flip', true, 'flip-kubelet', () => true, handBackOrder],
    ['verification', true, 'verify', () => true, handBackOrder],
    ['verification, without leader migration', false, 'verify', () => true, plainOrder],
  ] as const)('failing at %s', async (_where, leaderMigration, step, failsOn, expected) => {
    const { calls, handlers } = recording(STEP_IDS, {
      preflight: preflightAnswer(leaderMigration),
      [step]: async (event: unknown) => {
        if (failsOn(event as Event)) throw new VerificationFailedError('injected');
        return {};
      },
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.error).toEqual({ name: 'RolledBack', cause: 'injected' });
    const order = calls.map((c) =>
      [
        c.step,
        c.event.node,
        c.event.handBack === true ? 'hand-back' : undefined,
        c.event.leaderMigration === true && c.step === 'restore-control-plane-node' ? 'migrating' : undefined,
      ]
        .filter((x) => x !== undefined)
        .join(':'),
    );
    const kubeletsBack = order.lastIndexOf('restore-kubelet:w-1');
    expect(order.slice(kubeletsBack - 2, kubeletsBack + 1)).toEqual(
      ['cp-1', 'cp-2', 'w-1'].map((n) => `restore-kubelet:${n}`),
    );
    expect(order.slice(kubeletsBack + 1)).toEqual(expected);
  });

  const failingHandBack = (error: Error) =>
    recording(STEP_IDS, {
      preflight: preflightAnswer(true),
      'downgrade-preflight': async () => ({
        alreadyInTree: false,
        sourceRunId: 'up-1',
        controlPlaneNodes: ['cp-1', 'cp-2'],
        kubeletOrder: ['cp-1', 'cp-2', 'w-1'],
        leaderMigration: { enabled: true, reason: 'HA' },
      }),
      verify: async () => {
        throw new VerificationFailedError('injected');
      },
      'activate-ccm': async (event: unknown) => {
        if ((event as Event).handBack === true) throw error;
        return {};
      },
    });
  /** The steps from the hand-back's first on, its retries counted apart. */
  const afterHandBack = (calls: { step: string; event: Event }[]): { steps: string[]; attempts: number } => {
    const order = calls.map((c) => (c.event.handBack === true ? `${c.step}:hand-back` : c.step));
    const from = order.slice(order.indexOf('activate-ccm:hand-back'));
    const attempts = from.filter((s) => s === 'activate-ccm:hand-back').length;
    return { steps: from.filter((s, i) => s !== 'activate-ccm:hand-back' || i === 0), attempts };
  };
  const plainAfterHandBack = [
    'activate-ccm:hand-back',
    'stop-ccm',
    'restore-control-plane-node',
    'restore-control-plane-node',
    'remove-ccm',
  ];
  // The hand-back's Task retries a wait that ran out (NotReadyYet): no pauses here.
  const noPauses = { [S.rollbackCcmMigrating]: 0, [DOWNGRADE_STATES.ccmMigrating]: 0 };

  it('takes the plain way, named in the history, when the CCM never becomes Ready under the lease', async () => {
    const { calls, handlers } = failingHandBack(new NotReadyYetError('the CCM to be Ready'));
    const states: string[] = [];
    const result = await runLocally({
      workflow,
      handlers,
      input,
      retryIntervalOverrides: noPauses,
      onEvent: (e) => {
        if (e.type === 'StateEntered') states.push(e.state.name);
      },
    });

    // The run ends as rolled back with the upgrade's own error, not as a failed rollback.
    expect(result.error).toEqual({ name: 'RolledBack', cause: 'injected' });
    // Only once the wait has run out every retry (WAIT_FOR_CLUSTER: 1 + 8 attempts).
    expect(afterHandBack(calls)).toEqual({
      steps: [...plainAfterHandBack, 'record-rollback'],
      attempts: 1 + (WAIT_FOR_CLUSTER.maxAttempts ?? 0),
    });
    expect(states).toContain(S.rollbackFallBack);
  });

  it('ends the rollback as it stands on any other error of the hand-back, the CCM still running', async () => {
    const { calls, handlers } = failingHandBack(new AgentFailedError('something else'));
    const result = await runLocally({ workflow, handlers, input, retryIntervalOverrides: noPauses });

    expect(result.error?.name).toBe('AgentFailed');
    expect(afterHandBack(calls)).toEqual({
      steps: ['activate-ccm:hand-back', 'record-failure'],
      attempts: 1,
    });
  });

  it('does the same on the way back of a downgrade', async () => {
    const { calls, handlers } = failingHandBack(new NotReadyYetError('the CCM to be Ready'));
    const result = await runLocally({
      workflow: renderDefinition(downgradeDefinition),
      handlers,
      input,
      retryIntervalOverrides: noPauses,
    });

    expect(result.status).toBe('SUCCEEDED');
    expect(afterHandBack(calls).steps).toEqual([...plainAfterHandBack, 'verify-in-tree', 'finalize']);
  });
});

/**
 * The upgrade with `fault` from entering state `at` (its `entry`th time, a Map's item) until the rollback
 * starts, the states it entered and when the rollback started.
 */
async function failingUpgrade(
  at: string,
  fault: Fault,
  { options = {}, entry = 1 }: { options?: UpgradeInput['options']; entry?: number } = {},
) {
  const { t } = e2e as E2E;
  const states: string[] = [];
  let rollbackStartedAt = Number.POSITIVE_INFINITY;
  const result = await (e2e as E2E).upgrade({
    options,
    onEvent: (event: EventLog) => {
      if (event.type !== 'StateEntered') return;
      states.push(event.state.name);
      if (event.state.name === at && states.filter((s) => s === at).length === entry)
        t.twin.faults.add(fault);
      if (event.state.name !== S.rollbackKubelets) return;
      t.twin.faults.clear('error');
      rollbackStartedAt = Date.now();
    },
  });
  return { result, states, rollbackStartedAt };
}

/** Every node file the run may have touched: same bytes as at the start (mtimes aside). */
async function expectFilesAsAtStart(start: Map<string, string>): Promise<void> {
  const hashes = (files: Map<string, string>) =>
    new Map([...files].filter(([f]) => start.has(f)).map(([f, v]) => [f, v.split(' ')[0]]));
  expect(hashes(await nodeFiles((e2e as E2E).t))).toEqual(hashes(start));
}

/** No CCM left, every kube-controller-manager in-tree without leader migration. */
async function expectInTree(): Promise<void> {
  const { t } = e2e as E2E;
  const ccm = { name: 'aws-cloud-controller-manager', namespace: 'kube-system' };
  await expect(t.apps.readNamespacedDeployment(ccm)).rejects.toMatchObject({ code: 404 });
  await expect(t.apps.readNamespacedDaemonSet(ccm)).rejects.toMatchObject({ code: 404 });
  const ccmPods = await t.core.listNamespacedPod({
    namespace: 'kube-system',
    labelSelector: 'app.kubernetes.io/component=cloud-controller-manager',
  });
  expect(ccmPods.items).toEqual([]);
  for (const node of ['cp-1', 'cp-2', 'cp-3']) {
    const kcm = await t.core.readNamespacedPod({
      name: `kube-controller-manager-${node}`,
      namespace: 'kube-system',
    });
    expect(kcm.spec?.containers[0]?.command, node).toContain('--cloud-provider=aws');
    expect(kcm.spec?.containers[0]?.command?.join(' '), node).not.toContain('leader-migration');
  }
}

const listServicesFails = { kind: 'error', rate: 1, code: 500, verb: 'list', resource: 'services' } as const;
const agentJobsFail = { kind: 'error', rate: 1, code: 500, verb: 'create', resource: 'jobs' } as const;

describe('an HA upgrade that fails after the CCM ran Ready under leader migration', () => {
  it.each([
    ['in verification, everything moved', S.verify, 1, listServicesFails, {}],
    ['moving cp-2 external, cp-1 moved and cp-3 in-tree (phase 3)', S.moveNode, 2, agentJobsFail, {}],
    [
      'in verification, the CCM a DaemonSet on every control-plane node',
      S.verify,
      1,
      listServicesFails,
      { ccmWorkload: 'daemonset' },
    ],
  ] as const)(
    'rolls back by handing the cloud controllers back when it fails %s: never two, gaps only while a lease expires',
    async (_when, at, entry, fault, options) => {
      e2e = await startE2E(await realishHaSpec());
      const start = await nodeFiles(e2e.t);

      const seen = await observeControllers(e2e as E2E, () => failingUpgrade(at, fault, { entry, options }));
      const { result, states, rollbackStartedAt } = seen.result;

      expect(result.error?.name, result.error?.cause).toBe('RolledBack');
      expect(result.error?.cause).toMatch(/HTTP 500/);
      expect(states).toContain(S.ccmRuns);
      const rollback = states.slice(states.indexOf(S.rollbackKubelets));
      expect(rollback.filter((s) => [...HAND_BACK, ...PLAIN].includes(s))).toEqual(HAND_BACK);
      expect(rollback).not.toContain(S.rollbackStopCcm);
      expect(seen.maxActive).toBe(1);
      // What sets the hand-back apart from the plain way is the half-way check after this one.
      for (const gap of seen.noController) expect(gap.ms).toBeLessThan(HANDOVER_GAP_MS);
      // The upgrade's phase 3 may leave one (a lease holder moved external, its lease expiring, possibly
      // still when the rollback starts); the way back opens none.
      expect(seen.noController.filter((w) => w.since >= rollbackStartedAt && w.midway)).toEqual([]);
      await expectFilesAsAtStart(start);
      await expectInTree();
      expect((await e2e.store.get(result.clusterId, result.runId))?.status).toBe('rolled-back');
      await e2e.t.twin.monitor.stop();
      expect(e2e.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    },
    40_000,
  );

  // The same failure without leader migration: the measure above sees the window the hand-back avoids.
  it('without it, the plain way back leaves the cloud loops stopped with the control plane half-way', async () => {
    e2e = await startE2E(await realishHaSpec());

    const seen = await observeControllers(e2e as E2E, () =>
      failingUpgrade(S.verify, listServicesFails, { options: { leaderMigration: false } }),
    );
    const { result, states, rollbackStartedAt } = seen.result;

    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(states).not.toContain(S.ccmRuns);
    expect(states).toContain(S.rollbackStopCcm);
    expect(seen.maxActive).toBe(1);
    expect(seen.noController.filter((w) => w.since >= rollbackStartedAt && w.midway)).not.toEqual([]);
  }, 40_000);
});

describe('an HA upgrade that fails before the CCM ran', () => {
  it.each([
    ['staging the CCM', S.stage, { kind: 'error', rate: 1, code: 500, verb: 'patch' }],
    [
      'starting the CCM under the migration lease',
      S.startCcmMigrating,
      { kind: 'error', rate: 1, code: 500, verb: 'patch', resource: 'deployments' },
    ],
  ] as const)('rolls back the plain way when it fails %s', async (_when, at, fault) => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsHaMini));
    const start = await nodeFiles(e2e.t);

    const { result, states } = await failingUpgrade(at, fault);

    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(result.error?.cause).toMatch(/HTTP 500/);
    expect(states).not.toContain(S.ccmRuns);
    const rollback = states.slice(states.indexOf(S.rollbackKubelets));
    expect(rollback).toContain(S.rollbackByLeaderMigration);
    expect(rollback.filter((s) => [...HAND_BACK, ...PLAIN].includes(s))).toEqual(PLAIN);
    await expectFilesAsAtStart(start);
    await expectInTree();
  });
});
