/**
 * The run report's model from histories written by hand: who held the cloud loops along each path through
 * the workflows, retries as waits, the steps' phases, the twin monitor's intervals, the file diffs and the
 * lower bound. The browser test renders a real run; these are the paths a twin run does not take at once.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../lib/local/history.ts';
import { buildRunReport } from '../../lib/report/build.ts';
import type { Lane } from '../../lib/report/model.ts';
import type { RunRecord } from '../../lib/store/run-record.ts';
import { DOWNGRADE_STATES as D } from '../../state-machines/downgrade.ts';
import { UPGRADE_STATES as U } from '../../state-machines/upgrade.ts';

const T0 = Date.parse('2026-11-26T01:00:00.000Z');

function record(kind: RunRecord['kind'], extra: Partial<RunRecord> = {}): RunRecord {
  return {
    clusterId: 'c1',
    runId: 'up-1',
    kind,
    status: 'succeeded',
    startedAt: new Date(T0).toISOString(),
    updatedAt: new Date(T0).toISOString(),
    steps: {},
    ...extra,
  };
}

/** `[at, state, node?]`: the state entered at `at` and left 10 ms later. */
function states(kind: string, ...steps: Array<[number, string, string?]>): HistoryEntry[] {
  const entries: HistoryEntry[] = [{ type: 'run-started', at: T0, kind, maxUnavailable: 1 }];
  for (const [at, state, node] of steps) {
    const base = { type: 'state' as const, state, stateType: 'Task', ...(node ? { node } : {}) };
    entries.push({ ...base, at: T0 + at, event: 'entered' }, { ...base, at: T0 + at + 10, event: 'exited' });
  }
  const last = Math.max(...entries.map((e) => e.at));
  entries.push({ type: 'run-ended', at: last + 5, status: 'SUCCEEDED', transitions: 9, apiRequests: 40 });
  return entries;
}

const lane = (lanes: readonly Lane[], title: string): Lane | undefined =>
  lanes.find((l) => l.title === title);

function holders(kind: RunRecord['kind'], history: HistoryEntry[]): Array<[string | undefined, number]> {
  const report = buildRunReport({ record: record(kind), history });
  return (lane(report.lanes, 'Cloud controllers')?.spans ?? [])
    .filter((s) => s.kind === 'holder')
    .map((s) => [s.variant, s.startMs]);
}

describe('who held the cloud loops', () => {
  it('hands over with a gap and no overlap without leader migration: in-tree, none, CCM', () => {
    const history = states(
      'upgrade',
      [0, U.preflight],
      [20, U.stage],
      [40, U.moveNode, 'cp-1'],
      [60, U.controlPlane],
      [80, U.activate],
      [100, U.verify],
    );
    expect(holders('upgrade', history)).toEqual([
      ['kcm', 0],
      ['none', 70],
      ['ccm', 90],
    ]);
  });

  it('goes through the migration lease both ways under leader migration, never none', () => {
    const up = states(
      'upgrade',
      [0, U.stage],
      [20, U.enableMigration],
      [40, U.startCcmMigrating],
      [60, U.controlPlane],
      [80, U.activate],
    );
    expect(holders('upgrade', up)).toEqual([
      ['kcm', 0],
      ['kcm-lease', 30],
      ['ccm-lease', 50],
      ['ccm', 90],
    ]);
    const down = states(
      'downgrade',
      [0, D.kubelets],
      [20, D.ccmMigrating],
      [40, D.controlPlaneMigrating],
      [60, D.stopCcmMigrating],
      [80, D.migrationOff],
    );
    expect(holders('downgrade', down)).toEqual([
      ['ccm', 0],
      ['ccm-lease', 30],
      ['kcm-lease', 70],
      ['kcm', 90],
    ]);
  });

  it('gives the loops back to kube-controller-manager with the first node a plain rollback restores', () => {
    const history = states(
      'upgrade',
      [0, U.stage],
      [20, U.controlPlane],
      [40, U.activate],
      [60, U.rollbackStopCcm],
      [80, U.rollbackNode, 'cp-1'],
      [100, U.rollbackNode, 'cp-2'],
    );
    expect(holders('upgrade', history)).toEqual([
      ['kcm', 0],
      ['none', 30],
      ['ccm', 50],
      ['none', 70],
      ['kcm', 90],
    ]);
  });

  it('claims nothing for a run that changed nothing (a cluster already external)', () => {
    const history = states('upgrade', [0, U.preflight], [20, U.finalize]);
    expect(holders('upgrade', history)).toEqual([['unchanged', 0]]);
  });
});

describe('node lanes', () => {
  it('draws a retry as a wait inside its step, and a phase up to the step’s next report', () => {
    const node = { node: 'w-1', stateType: 'Task', state: U.flipKubelet } as const;
    const error = { name: 'NotReadyYet', cause: 'node w-1 not Ready' };
    const history: HistoryEntry[] = [
      { type: 'run-started', at: T0, kind: 'upgrade', maxUnavailable: 1 },
      { type: 'state', at: T0 + 100, event: 'entered', ...node },
      {
        type: 'progress',
        at: T0 + 150,
        step: 'flip-kubelet',
        node: 'w-1',
        message: 'x',
        phase: 'kubelet-restart',
      },
      { type: 'state', at: T0 + 400, event: 'failed', ...node, error },
      { type: 'state', at: T0 + 900, event: 'retried', ...node },
      {
        type: 'progress',
        at: T0 + 950,
        step: 'flip-kubelet',
        node: 'w-1',
        message: 'kubelet already external',
      },
      { type: 'state', at: T0 + 1000, event: 'exited', ...node },
    ];
    const spans = lane(buildRunReport({ record: record('upgrade'), history }).lanes, 'w-1')?.spans;
    expect(spans?.map((s) => [s.kind, s.startMs, s.endMs])).toEqual([
      ['step', 100, 1000],
      ['wait', 400, 900],
      ['kubelet-restart', 150, 950],
    ]);
    expect(spans?.[1]?.label).toBe('waiting to retry after NotReadyYet');
  });

  it('draws a step that failed without a catch as failed, ending where it failed', () => {
    const node = { node: 'cp-1', stateType: 'Task', state: U.moveNode } as const;
    const history: HistoryEntry[] = [
      { type: 'run-started', at: T0, kind: 'upgrade', maxUnavailable: 1 },
      { type: 'state', at: T0 + 100, event: 'entered', ...node },
      {
        type: 'state',
        at: T0 + 300,
        event: 'failed',
        ...node,
        error: { name: 'AgentFailed', cause: 'bad file' },
      },
      { type: 'run-ended', at: T0 + 310, status: 'FAILED', transitions: 3 },
    ];
    const spans = lane(buildRunReport({ record: record('upgrade'), history }).lanes, 'cp-1')?.spans;
    expect(spans).toEqual([
      { kind: 'failed', label: U.moveNode, startMs: 100, endMs: 300, detail: 'AgentFailed: bad file' },
    ]);
  });
});

describe('the summary', () => {
  const snapshot = {
    nodes: { 'cp-1': { role: 'control-plane' }, 'w-1': { role: 'worker' }, 'w-2': { role: 'worker' } },
    files: {
      'w-1': [{ path: '/f', exists: true, sha256: 'aaa', flags: { 'cloud-provider': 'aws' } }],
    },
  };

  it('overlays the twin monitor’s intervals on the cloud controllers’ lane', () => {
    const history = states('upgrade', [0, U.stage], [50, U.activate]);
    const report = buildRunReport({
      record: record('upgrade', { snapshot }),
      history,
      invariants: [
        {
          kind: 'two-cloud-controllers',
          start: new Date(T0 + 55).toISOString(),
          end: new Date(T0 + 58).toISOString(),
          durationMs: 3,
          detail: {},
        },
      ],
    });
    const spans = lane(report.lanes, 'Cloud controllers')?.spans.filter((s) => s.kind === 'invariant');
    expect(spans).toEqual([
      { kind: 'invariant', label: 'two-cloud-controllers', startMs: 55, endMs: 58, detail: '3 ms' },
    ]);
    expect(report.invariantsRead).toBe(true);
  });

  it('diffs each file by hash and flags, sets the duration against the twin’s lower bound, sums the counts', () => {
    const history: HistoryEntry[] = [
      ...states('upgrade', [0, U.stage], [1000, U.activate]),
      {
        type: 'files',
        at: T0 + 500,
        node: 'w-1',
        op: 'set-flags',
        files: [
          { path: '/f', exists: true, sha256: 'bbb', flags: { 'cloud-provider': 'external' }, changed: true },
        ],
      },
    ];
    const report = buildRunReport({
      record: record('upgrade', { snapshot }),
      history,
      latencies: { staticPodRestart: 2000, kubeletRestart: 1000, podStart: 500 },
    });
    expect(report.files).toEqual([
      {
        node: 'w-1',
        files: [
          {
            path: '/f',
            before: { exists: true, sha256: 'aaa', flags: { 'cloud-provider': 'aws' } },
            after: { exists: true, sha256: 'bbb', flags: { 'cloud-provider': 'external' } },
            changed: true,
          },
        ],
      },
    ]);
    // 1 control-plane node × 2 s + ⌈3 nodes / 1⌉ × 1 s + the CCM's start and its rollout, 0.5 s each
    // (no lease given, so no takeover wait)
    expect(report.lowerBound?.ms).toBe(6000);
    expect(report).toMatchObject({ durationMs: 1015, apiRequests: 40, transitions: 9, nodes: 3 });
  });
});
