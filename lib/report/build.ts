/**
 * A run report from the run's own records: its record (outcome, snapshot), its history (the engine's states,
 * the steps' progress, the agent's file reports) and, on a twin, the invariant monitor's intervals. Nothing
 * here is inferred that the records do not say; what they do not say goes into the report's notes.
 */
import { APPROVAL_STATES } from '../../state-machines/approval-gate.ts';
import type { HistoryEntry, ReportedFile } from '../local/history.ts';
import type { RunRecord } from '../store/run-record.ts';
import type { Violation } from '../twin/invariants.ts';
import { holderSpans } from './holders.ts';
import { makespanLowerBoundMs, type RestartLatencies } from './makespan-bound.ts';
import type { FileDiff, FileState, Lane, RunReport, Span } from './model.ts';

export interface ReportSources {
  readonly record: RunRecord;
  readonly history: readonly HistoryEntry[];
  /** The twin's invariants.jsonl, when the run was on a twin and it was given. */
  readonly invariants?: readonly Violation[];
  /** The twin's latencies, when given: the lower bound is then the benchmark's. */
  readonly latencies?: RestartLatencies;
  /** Said in the notes, e.g. that Step Functions' history has no progress. */
  readonly notes?: readonly string[];
}

/** States that are decisions, not work: they take no time worth drawing. */
const INSTANT_STATE_TYPES = new Set(['Choice', 'Pass', 'Succeed', 'Fail']);

const PHASE_LABELS: Readonly<Record<string, string>> = {
  'kubelet-restart': 'kubelet restarting on its new flags, until the node is Ready',
  'static-pods-restart': 'kube-apiserver and kube-controller-manager restarting on their new manifests',
  'uninitialized-taint': 'tainted uninitialized, until the CCM initialised it',
};

type StateEntry = Extract<HistoryEntry, { type: 'state' }>;

interface SnapshotShape {
  nodes?: Record<string, { role?: string }>;
  files?: Record<string, Array<FileState & { path: string }>>;
}

const keyOf = (e: { state: string; node?: string }): string => `${e.state}\u0000${e.node ?? ''}`;

/** Every state's span, each retry's pause, each failure, on its node's lane or the run's (`''`). */
function stateSpans(states: readonly StateEntry[], t0: number, endMs: number): Map<string, Span[]> {
  const byLane = new Map<string, Span[]>();
  const add = (node: string | undefined, span: Span): void => {
    const lane = node ?? '';
    byLane.set(lane, [...(byLane.get(lane) ?? []), span]);
  };
  const open = new Map<string, StateEntry>();
  const failed = new Map<string, StateEntry>();
  const ms = (at: number): number => at - t0;
  for (const e of states) {
    if (INSTANT_STATE_TYPES.has(e.stateType)) continue;
    const key = keyOf(e);
    const entered = open.get(key);
    switch (e.event) {
      case 'entered':
        open.set(key, e);
        break;
      case 'failed':
        failed.set(key, e);
        break;
      case 'retried': {
        const failure = failed.get(key);
        failed.delete(key);
        add(e.node, {
          kind: 'wait',
          label: `waiting to retry after ${failure?.error?.name ?? 'an error'}`,
          startMs: ms(failure?.at ?? e.at),
          endMs: ms(e.at),
          ...(failure?.error ? { detail: failure.error.cause } : {}),
        });
        break;
      }
      case 'exited':
      case 'caught': {
        // Left after a failure not retried: caught (the local engine says so, Step Functions just leaves it).
        const failure = failed.get(key);
        open.delete(key);
        failed.delete(key);
        if (!entered) break;
        const wait = e.state === APPROVAL_STATES.approval;
        add(e.node, {
          kind: e.event === 'caught' || failure ? 'failed' : wait ? 'wait' : 'step',
          label: e.state,
          startMs: ms(entered.at),
          endMs: ms(e.at),
          ...(e.event === 'caught' || failure
            ? { detail: `${failure?.error?.name ?? 'failed'}, caught by the workflow` }
            : {}),
        });
        break;
      }
    }
  }
  // Left open: failed without a catch (the run's end), or cut with the run.
  for (const [key, e] of open) {
    const failure = failed.get(key);
    add(e.node, {
      kind: failure ? 'failed' : 'step',
      label: e.state,
      startMs: ms(e.at),
      endMs: failure ? ms(failure.at) : endMs,
      detail: failure
        ? `${failure.error?.name ?? 'failed'}: ${failure.error?.cause ?? ''}`
        : 'cut: not ended',
    });
  }
  for (const spans of byLane.values()) spans.sort((a, b) => a.startMs - b.startMs);
  return byLane;
}

/** The phases the steps marked: from the mark to the step's next report on the node, or its state's end. */
function phaseSpans(history: readonly HistoryEntry[], nodeSpans: Map<string, Span[]>, t0: number): Span[][] {
  const progress = history.filter((e) => e.type === 'progress');
  const out = new Map<string, Span[]>();
  for (const [i, p] of progress.entries()) {
    if (!p.phase || !p.node) continue;
    const start = p.at - t0;
    const next = progress.slice(i + 1).find((q) => q.node === p.node && q.step === p.step);
    const enclosing = (nodeSpans.get(p.node) ?? []).find((s) => s.startMs <= start && s.endMs >= start);
    const end = Math.min(next ? next.at - t0 : Number.POSITIVE_INFINITY, enclosing?.endMs ?? start);
    out.set(p.node, [
      ...(out.get(p.node) ?? []),
      { kind: p.phase, label: PHASE_LABELS[p.phase] ?? p.phase, startMs: start, endMs: Math.max(start, end) },
    ]);
  }
  return [...nodeSpans.keys()].map((node) => out.get(node) ?? []);
}

function invariantSpans(violations: readonly Violation[], t0: number, endMs: number): Span[] {
  return violations
    .map((v) => {
      const start = Date.parse(v.start) - t0;
      const end = Date.parse(v.end) - t0;
      const nodes = Array.isArray(v.detail.nodes) ? ` (${(v.detail.nodes as unknown[]).join(', ')})` : '';
      return {
        kind: 'invariant' as const,
        label: v.kind,
        startMs: start,
        endMs: end,
        detail: `${v.durationMs} ms${nodes}`,
      };
    })
    .filter((s) => s.endMs >= 0 && s.startMs <= endMs);
}

const stateOf = (f: FileState): FileState => ({
  exists: f.exists,
  ...(f.sha256 ? { sha256: f.sha256 } : {}),
  ...(f.flags ? { flags: f.flags } : {}),
});

/** Per node, each file as the snapshot recorded it and as the agent last reported it. */
function fileDiffs(snapshot: SnapshotShape | undefined, history: readonly HistoryEntry[]) {
  const after = new Map<string, Map<string, ReportedFile>>();
  for (const e of history) {
    if (e.type !== 'files') continue;
    const files = after.get(e.node) ?? new Map<string, ReportedFile>();
    for (const f of e.files) files.set(f.path, f);
    after.set(e.node, files);
  }
  const nodes = [...new Set([...Object.keys(snapshot?.files ?? {}), ...after.keys()])].sort();
  return nodes.map((node) => {
    const before = new Map((snapshot?.files?.[node] ?? []).map((f) => [f.path, f]));
    const reported = after.get(node) ?? new Map<string, ReportedFile>();
    const paths = [...new Set([...before.keys(), ...reported.keys()])].sort();
    const files: FileDiff[] = paths.map((p) => {
      const b = before.get(p);
      const a = reported.get(p);
      const changed = !!a && (!b || a.exists !== b.exists || a.sha256 !== b.sha256);
      return { path: p, ...(b ? { before: stateOf(b) } : {}), ...(a ? { after: stateOf(a) } : {}), changed };
    });
    return { node, files };
  });
}

/** The shortest of a phase's spans (a restart measured in this run), if any. */
function shortest(spans: readonly Span[], kind: Span['kind']): number | undefined {
  const lengths = spans.filter((s) => s.kind === kind).map((s) => s.endMs - s.startMs);
  return lengths.length ? Math.min(...lengths) : undefined;
}

function lowerBound(
  sources: ReportSources,
  shape: { controlPlaneNodes: number; nodes: number; maxUnavailable?: number },
  phases: readonly Span[],
): RunReport['lowerBound'] {
  if (sources.record.kind !== 'upgrade' || !shape.maxUnavailable || shape.nodes === 0) return undefined;
  const counts = { ...shape, maxUnavailable: shape.maxUnavailable };
  if (sources.latencies) {
    return {
      ms: makespanLowerBoundMs(counts, sources.latencies),
      basis: "the twin's latencies, as the benchmark computes it (restarts and the CCM's lease takeover)",
    };
  }
  const staticPodRestart = shortest(phases, 'static-pods-restart');
  const kubeletRestart = shortest(phases, 'kubelet-restart');
  if (staticPodRestart === undefined || kubeletRestart === undefined) return undefined;
  return {
    ms: makespanLowerBoundMs(counts, { staticPodRestart, kubeletRestart, podStart: 0 }),
    basis: "this run's shortest static pod and kubelet restarts (restarts only: no lease handovers)",
  };
}

export function buildRunReport(sources: ReportSources): RunReport {
  const { record, history } = sources;
  const starts = history.filter((e) => e.type === 'run-started');
  const ends = history.filter((e) => e.type === 'run-ended');
  const t0 = starts[0]?.at ?? Date.parse(record.startedAt);
  const last = Math.max(t0, ...history.map((e) => e.at));
  const endMs = last - t0;
  const states = history.filter((e) => e.type === 'state');
  const byLane = stateSpans(states, t0, endMs);
  const snapshot = record.snapshot as SnapshotShape | undefined;
  const roles = snapshot?.nodes ?? {};
  const nodeNames = [...new Set([...Object.keys(roles), ...[...byLane.keys()].filter((n) => n !== '')])];
  const cp = (n: string): number => (roles[n]?.role === 'control-plane' ? 0 : 1);
  nodeNames.sort((a, b) => cp(a) - cp(b) || a.localeCompare(b, 'en', { numeric: true }));
  const nodeSpans = new Map(nodeNames.map((n) => [n, byLane.get(n) ?? []]));
  const phases = phaseSpans(history, nodeSpans, t0);
  const invariants = invariantSpans(sources.invariants ?? [], t0, endMs);
  const lanes: Lane[] = [
    { id: 'run', title: 'Workflow', role: 'run', spans: byLane.get('') ?? [] },
    {
      id: 'cloud',
      title: 'Cloud controllers',
      role: 'cloud',
      subtitle: 'who ran the cloud loops',
      spans: [...holderSpans(record.kind, history, t0, endMs), ...invariants],
    },
    ...nodeNames.map(
      (node, i): Lane => ({
        id: `node-${i}`,
        title: node,
        role: 'node',
        subtitle: roles[node]?.role ?? 'node',
        spans: [...(nodeSpans.get(node) ?? []), ...(phases[i] ?? [])],
      }),
    ),
  ];
  const maxUnavailable = starts.at(-1)?.maxUnavailable;
  const controlPlaneNodes = nodeNames.filter((n) => roles[n]?.role === 'control-plane').length;
  const bound = lowerBound(
    sources,
    { controlPlaneNodes, nodes: Object.keys(roles).length, maxUnavailable },
    phases.flat(),
  );
  const counted = ends.filter((e) => e.apiRequests !== undefined);
  const notes = [...(sources.notes ?? [])];
  if (starts.length > 1) notes.push(`the run was cut and resumed: ${starts.length} executions`);
  if (!snapshot) notes.push('the run recorded no snapshot (it ended before preflight recorded one)');
  if (!sources.invariants) {
    notes.push(
      'no invariant monitor was read: only a twin has one (report --twin-dir overlays its intervals)',
    );
  }
  return {
    clusterId: record.clusterId,
    runId: record.runId,
    kind: record.kind,
    outcome: record.status,
    ...(record.error ? { error: record.error } : {}),
    startedAt: new Date(t0).toISOString(),
    durationMs: (ends.at(-1)?.at ?? last) - t0,
    executions: Math.max(1, starts.length),
    ...(bound ? { lowerBound: bound } : {}),
    ...(counted.length ? { apiRequests: counted.reduce((n, e) => n + (e.apiRequests ?? 0), 0) } : {}),
    ...(ends.length ? { transitions: ends.reduce((n, e) => n + e.transitions, 0) } : {}),
    ...(maxUnavailable ? { maxUnavailable } : {}),
    nodes: nodeNames.length,
    lanes,
    files: fileDiffs(snapshot, history),
    invariantsRead: sources.invariants !== undefined,
    notes,
  };
}
