/**
 * Who ran the cloud loops during a run, from the states it went through. Each hand-over is a step that ends
 * only once the hand-over is seen (the CCM leading, a kube-controller-manager Ready with its new flags), so
 * the step's end is when the loops changed hands. On a twin, the invariant monitor's intervals are the
 * check of this: none with two controllers, none with a tainted node and no controller.
 */
import { DOWNGRADE_STATES } from '../../state-machines/downgrade.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import type { HistoryEntry } from '../local/history.ts';
import type { Span } from './model.ts';

export type Holder = 'kcm' | 'kcm-lease' | 'ccm-lease' | 'ccm' | 'none';

export const HOLDER_LABELS: Readonly<Record<Holder, string>> = {
  kcm: 'kube-controller-manager (in-tree)',
  'kcm-lease': 'kube-controller-manager (in-tree), under the migration lease',
  'ccm-lease': 'CCM, under the migration lease',
  ccm: 'CCM',
  none: 'none: no controller runs the cloud loops',
};

interface HandOver {
  /** The state whose first end hands the loops over. */
  readonly state: string;
  /** Only from these holders (another path through the workflow leaves it alone). */
  readonly from?: readonly Holder[];
  readonly to: Holder;
}

interface KindRules {
  readonly initial: Holder;
  /** The state that shows the run changes the cluster: before it, nothing changed hands. */
  readonly firstChange: string;
  readonly handOvers: readonly HandOver[];
}

const U = UPGRADE_STATES;
const D = DOWNGRADE_STATES;

const RULES: Readonly<Record<string, KindRules>> = {
  upgrade: {
    initial: 'kcm',
    firstChange: U.stage,
    handOvers: [
      { state: U.enableMigration, from: ['kcm'], to: 'kcm-lease' },
      { state: U.startCcmMigrating, to: 'ccm-lease' },
      // Without leader migration the last kube-controller-manager left the in-tree loops with the map's end.
      { state: U.controlPlane, from: ['kcm'], to: 'none' },
      { state: U.activate, to: 'ccm' },
      { state: U.rollbackStopCcm, from: ['ccm', 'ccm-lease'], to: 'none' },
      { state: U.rollbackNode, from: ['none'], to: 'kcm' },
      { state: U.rollbackCcmMigrating, to: 'ccm-lease' },
      { state: U.rollbackStopCcmMigrating, to: 'kcm-lease' },
      { state: U.rollbackMigrationOff, from: ['kcm-lease'], to: 'kcm' },
    ],
  },
  downgrade: {
    initial: 'ccm',
    firstChange: D.kubelets,
    handOvers: [
      { state: D.ccmMigrating, from: ['ccm'], to: 'ccm-lease' },
      { state: D.stopCcmMigrating, to: 'kcm-lease' },
      { state: D.migrationOff, from: ['kcm-lease'], to: 'kcm' },
      { state: D.stopCcm, from: ['ccm', 'ccm-lease'], to: 'none' },
      { state: D.restoreNode, from: ['none'], to: 'kcm' },
    ],
  },
};

function holderSpan(holder: Holder, startMs: number, endMs: number): Span {
  return { kind: 'holder', variant: holder, label: HOLDER_LABELS[holder], startMs, endMs };
}

/** The cloud loops' holders over [0, endMs], from the history's state ends (ms from `t0`). */
export function holderSpans(
  kind: string,
  history: readonly HistoryEntry[],
  t0: number,
  endMs: number,
): Span[] {
  const rules = RULES[kind];
  const states = history.filter((e) => e.type === 'state');
  const changed = states.some((e) => e.event === 'entered' && e.state === rules?.firstChange);
  if (!rules || !changed) {
    return [{ kind: 'holder', variant: 'unchanged', label: 'not changed by this run', startMs: 0, endMs }];
  }
  const spans: Span[] = [];
  let holder = rules.initial;
  let since = 0;
  const done = new Set<HandOver>();
  for (const e of states) {
    if (e.event !== 'exited') continue;
    const handOver = rules.handOvers.find(
      (h) => !done.has(h) && h.state === e.state && (!h.from || h.from.includes(holder)),
    );
    if (!handOver || handOver.to === holder) continue;
    done.add(handOver);
    const at = e.at - t0;
    spans.push(holderSpan(holder, since, at));
    holder = handOver.to;
    since = at;
  }
  spans.push(holderSpan(holder, since, endMs));
  return spans;
}
