/**
 * What a cluster should be, when the operator does not say: the outcome of its last finished run in the
 * store (an upgrade that succeeded → external; a downgrade that succeeded or an upgrade rolled back →
 * in-tree), with the provider that run recorded. A failed run leaves no expectation: its cluster is in a
 * middle state only the operator can name.
 */
import { SnapshotSchema } from '../steps/snapshot.ts';
import type { RunStore } from '../store/run-store.ts';
import type { DesiredMode } from './findings.ts';

export interface Expectation {
  readonly expect: DesiredMode;
  readonly provider: string;
  /** The run it comes from. */
  readonly runId: string;
}

export async function expectationFromRuns(
  store: RunStore,
  clusterId: string,
): Promise<Expectation | undefined> {
  // A remediation keeps the cluster where its last migration took it: it says nothing of its own.
  const last = (await store.list(clusterId))
    .filter((r) => r.status !== 'running' && r.kind !== 'remediate')
    .at(-1);
  if (!last || last.snapshot === undefined || last.status === 'failed') return undefined;
  const expect: DesiredMode = last.kind === 'upgrade' && last.status === 'succeeded' ? 'external' : 'in-tree';
  return { expect, provider: SnapshotSchema.parse(last.snapshot).provider, runId: last.runId };
}
