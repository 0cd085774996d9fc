/**
 * One deadline per invocation, on the twin: flip-kubelet waits for its agent Job, then for the node to be
 * Ready after the kubelet restart, each well within its own bound. With a deadline shorter than the two
 * together it ends at the deadline with DeadlineReached (which the state machine retries) instead of taking
 * both, and run again it leaves the cluster as a run nobody cut does. A whole upgrade whose invocations each
 * get less time than a kubelet restart is cut, resumed by the state machine's retry, and ends as one uncut.
 */
import { afterEach, expect, it } from 'vitest';
import { DeadlineReachedError } from '../../lib/errors.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { localContext } from '../../lib/local/context.ts';
import { isNodeReady } from '../../lib/steps/cluster.ts';
import { runStep } from '../../lib/steps/index.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

/** The kubelet takes this long to come back; the agent's Job starts in a tenth of it. */
const KUBELET_RESTART_MS = 3000;
/** Enough for the agent's Job, not for the kubelet's restart after it. */
const BUDGET_MS = 1500;
const NODE = 'worker-1';
const EVENT = { clusterId: 'aws-mini', runId: 'up-deadline', node: NODE };

const runs: E2E[] = [];
afterEach(async () => {
  await Promise.all(runs.splice(0).map((r) => r.stop()));
});

/** A twin whose kubelets restart slowly, with the run's preflight done (the flip reads its snapshot). */
async function slowKubeletTwin(): Promise<E2E> {
  const spec = await fixtureSpec(FIXTURES.awsMini);
  const run = await startE2E({
    ...spec,
    latencies: { ...spec.latencies, podStart: 100, kubeletRestart: KUBELET_RESTART_MS },
  });
  runs.push(run);
  const { clusterId, runId } = EVENT;
  await runStep('preflight', { clusterId, runId, options: {} }, stepContext(run, Deadline.in(60_000)));
  return run;
}

function stepContext(run: E2E, deadline: Deadline) {
  return { ...localContext({ clients: run.t, pollMs: 10 }, deadline), store: run.store };
}

function flipKubelet(run: E2E, deadline: Deadline): Promise<unknown> {
  return runStep('flip-kubelet', EVENT, stepContext(run, deadline));
}

/**
 * What a step or a run leaves: every node file's bytes (under the run's id where the agent keeps backups),
 * the kubelet's flags, the node's readiness, agent Jobs.
 */
async function clusterState(run: E2E, runId?: string) {
  const files = [...(await nodeFiles(run.t))].map(([file, digest]) => [
    runId ? file.replaceAll(runId, '<run>') : file,
    digest.split(' ')[0],
  ]);
  const jobs = await run.t.batch.listNamespacedJob({ namespace: 'kube-system' });
  return {
    files: files.sort(),
    kubelet: Object.fromEntries(run.t.twin.nodes.kubelet(NODE).flags),
    ready: isNodeReady(await run.t.core.readNode({ name: NODE })),
    jobs: jobs.items.length,
  };
}

it('ends a step whose two waits outlast the deadline with DeadlineReached at the deadline, and a retry finishes it', async () => {
  const cut = await slowKubeletTwin();
  const started = Date.now();
  const error = await flipKubelet(cut, Deadline.in(BUDGET_MS)).catch((e: unknown) => e);
  const tookMs = Date.now() - started;

  expect(error).toBeInstanceOf(DeadlineReachedError);
  expect((error as Error).message).toMatch(`node ${NODE} to be Ready`);
  // At the deadline, not after the kubelet's restart (which the second wait alone would sit out).
  expect(tookMs).toBeLessThan(BUDGET_MS + 1000);

  // The state machine's retry: a new invocation with a deadline of its own.
  await flipKubelet(cut, Deadline.in(KUBELET_RESTART_MS * 10));

  const uncut = await slowKubeletTwin();
  await flipKubelet(uncut, Deadline.in(KUBELET_RESTART_MS * 10));
  expect(await clusterState(cut)).toEqual(await clusterState(uncut));
  expect((await clusterState(cut)).ready).toBe(true);
});

it('resumes an upgrade whose steps the deadline cuts, and ends it as an upgrade nobody cut', async () => {
  const cut = await slowKubeletTwin();
  let resumed = 0;
  const up = await cut.upgrade({
    stepBudgetMs: BUDGET_MS,
    onEvent: (e) => {
      if (e.type === 'StateRetried' && e.retry.retrier.ErrorEquals.includes('DeadlineReached')) resumed += 1;
    },
  });
  expect(up.error, up.error?.cause).toBeUndefined();
  // Every kubelet's flip at least: its restart outlasts an invocation.
  expect(resumed).toBeGreaterThanOrEqual(cut.t.twin.spec.nodeGroups.reduce((n, g) => n + g.count, 0));

  const uncut = await slowKubeletTwin();
  const plain = await uncut.upgrade();
  expect(plain.error, plain.error?.cause).toBeUndefined();
  expect(await clusterState(cut, up.runId)).toEqual(await clusterState(uncut, plain.runId));
});
