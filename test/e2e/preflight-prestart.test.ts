/**
 * Preflight's agent round: the first node's inspection alone (an image or bundle its launcher refuses is
 * reported once), the others' pods started beside it, waiting for their go; told to go together once the
 * first answered, or deleted unrun if it did not.
 */
import { afterEach, expect, it } from 'vitest';
import { AGENT_GO_CONFIGMAP, type AgentRequest } from '../../lib/agent/protocol.ts';
import { localContext } from '../../lib/local/context.ts';
import { examineCluster } from '../../lib/steps/preflight.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

/** examineCluster on the twin, recording which agents were pre-started and how each was run. */
async function examine(run: E2E, agentImage?: string) {
  const prestarted: string[] = [];
  const runs: { node: string; goGiven: boolean }[] = [];
  const ctx = localContext({
    clients: run.t,
    pollMs: 10,
    waitMs: 2000,
    ...(agentImage ? { agentImage } : {}),
  });
  const start = ctx.prestartAgent;
  const outcome = await examineCluster(
    {
      ...ctx,
      agent: (node: string, request: AgentRequest, how = {}) => {
        runs.push({ node, goGiven: how.goGiven ?? false });
        return ctx.agent(node, request, how);
      },
      ...(start && {
        prestartAgent: (node: string, request: AgentRequest) => {
          prestarted.push(node);
          return start(node, request);
        },
      }),
    },
    'pf-prestart',
    {},
  ).catch((err: unknown) => err as Error);
  // The twin runs no other Job.
  const jobs = await run.t.batch.listNamespacedJob({ namespace: 'kube-system' });
  const go = await run.t.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace: 'kube-system' });
  return { outcome, prestarted, runs, jobsLeft: jobs.items.length, goKeys: Object.keys(go.data ?? {}) };
}

it('starts every node but the first beside it, tells them to go once it answered, and takes the go back', async () => {
  e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
  const { outcome, prestarted, runs, jobsLeft, goKeys } = await examine(e2e);

  expect(outcome).not.toBeInstanceOf(Error);
  expect(prestarted.sort()).toEqual(['worker-1', 'worker-2']);
  expect(runs[0]).toEqual({ node: 'cp-1', goGiven: false });
  expect(runs.slice(1).sort((a, b) => a.node.localeCompare(b.node))).toEqual([
    { node: 'worker-1', goGiven: true },
    { node: 'worker-2', goGiven: true },
  ]);
  expect(jobsLeft).toBe(0);
  expect(goKeys).toEqual([]);
});

it('deletes the pre-started agents unrun when the first inspection is refused', async () => {
  const image = 'mirror.example.com/library/node:22-alpine';
  const spec = await fixtureSpec(FIXTURES.awsMini);
  e2e = await startE2E({ ...spec, images: { [image]: { lacks: ['nsenter'] } } });
  const { outcome, prestarted, runs, jobsLeft, goKeys } = await examine(e2e, image);

  expect((outcome as Error).name).toBe('AgentImageUnfit');
  expect(prestarted.sort()).toEqual(['worker-1', 'worker-2']);
  expect(runs).toEqual([{ node: 'cp-1', goGiven: false }]);
  expect(jobsLeft).toBe(0);
  expect(goKeys).toEqual([]);
});
