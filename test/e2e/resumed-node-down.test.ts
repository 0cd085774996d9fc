/**
 * A resumed upgrade whose node is down is not "nothing changed". Found by the soak
 * (`npm run soak -- --runs 1 --seed 1273`: vSphere, the CLI killed after flipping a node whose kubelet never
 * came back): the resumed run's preflight waited for every node to be Ready and ended PreflightFailed,
 * exit 3, "nothing changed", on a cluster whose node files it had changed. Resumed, preflight now goes on
 * with its first plan, so that the steps wait for the node and roll back; a fresh run still refuses.
 */
import { afterEach, expect, it } from 'vitest';
import { PreflightFailedError } from '../../lib/errors.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { localContext } from '../../lib/local/context.ts';
import { isNodeReady } from '../../lib/steps/cluster.ts';
import type { Progress } from '../../lib/steps/context.ts';
import { runStep } from '../../lib/steps/index.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

const NODE = 'worker-1';
const CLUSTER = 'aws-mini';

let run: E2E | undefined;
afterEach(async () => {
  await run?.stop();
  run = undefined;
});

function preflight(
  e2e: E2E,
  runId: string,
  progress: Progress[] = [],
  clusterId = CLUSTER,
): Promise<unknown> {
  const ctx = localContext({ clients: e2e.t, pollMs: 10, waitMs: 1500, onProgress: (p) => progress.push(p) });
  return runStep(
    'preflight',
    { clusterId, runId, options: {} },
    { ...ctx, store: e2e.store, deadline: Deadline.in(60_000) },
  );
}

it('resumed with a node down, preflight goes on with its first plan; a fresh run is refused', async () => {
  const spec = await fixtureSpec(FIXTURES.awsMini);
  run = await startE2E({ ...spec, faults: [...spec.faults, { kind: 'nodeNeverReturns', node: NODE }] });
  const first = await preflight(run, 'up-cut');
  // The run flipped the node's kubelet, which never came back; then the process died.
  await run.t.twin.nodes.restartKubelet(NODE);
  expect(isNodeReady(await run.t.core.readNode({ name: NODE }))).toBe(false);

  const progress: Progress[] = [];
  const resumed = await preflight(run, 'up-cut', progress);

  expect(resumed).toEqual(first);
  expect(progress.map((p) => p.message).join('\n')).toContain(
    `nodes not Ready: ${NODE}: the run resumes with the plan of its first preflight`,
  );
  // Another run of the same cluster (under another id: the cut run still holds it).
  const fresh = await preflight(run, 'up-fresh', [], 'aws-mini-again').catch((e: unknown) => e);
  expect(fresh).toBeInstanceOf(PreflightFailedError);
  expect((fresh as Error).message).toBe(`nodes not Ready: ${NODE}`);
});
