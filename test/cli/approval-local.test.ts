/**
 * `ccm-migrate upgrade --require-approval` in local mode against the twin: the operator is asked again after
 * preflight, with what preflight found; "no" ends the run failed with the cluster as it was and released,
 * "yes" lets the upgrade run to its end.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { CliError, EXIT } from '../../lib/cli/exit-codes.ts';
import { migrationCommand } from '../../lib/cli/migration.ts';
import { ccmDeploymentRef } from '../../lib/providers/render.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { nodeFiles } from '../e2e/harness.ts';
import { FIXTURES, fixtureTwins } from '../twin/running-twin.ts';
import { textSink } from './text-sink.ts';

const twins = fixtureTwins();
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-cli-approval-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** An upgrade asking for approval, every question recorded and answered by `answers` in turn. */
async function upgrade(answers: boolean[]) {
  const t = await twins(FIXTURES.awsMini);
  const store = new LocalRunStore(dir);
  const questions: string[] = [];
  const out = textSink();
  const before = await nodeFiles(t);
  const outcome = await migrationCommand({
    kind: 'upgrade',
    clients: t,
    store,
    clusterId: 'c1',
    maxUnavailable: 2,
    options: { requireApproval: true },
    yes: false,
    confirm: async (question) => {
      questions.push(question);
      return answers[questions.length - 1] ?? false;
    },
    out,
  }).catch((err: unknown) => err);
  return { t, store, questions, out, before, outcome };
}

it('ends the run failed, the cluster untouched and released, when the operator says no after preflight', async () => {
  const { t, store, questions, before, outcome } = await upgrade([true, false]);

  expect(outcome).toBeInstanceOf(CliError);
  expect((outcome as CliError).exitCode).toBe(EXIT.notApproved);
  expect((outcome as CliError).message).toBe(
    'ApprovalRejected: not approved at the terminal: nothing was changed',
  );
  expect(questions).toHaveLength(2);
  expect(questions[1]).toMatch(
    /^Preflight passed for cluster c1 \(aws, Kubernetes v1\.\d+\.\d+, 3 nodes\)\. Change it now\?$/,
  );
  expect(await nodeFiles(t)).toEqual(before);
  const ccm = ccmDeploymentRef('aws');
  await expect(t.apps.readNamespacedDeployment(ccm)).rejects.toMatchObject({ code: 404 });
  expect(await store.current('c1')).toBeUndefined();
  const [run] = await store.list('c1');
  expect(run).toMatchObject({ status: 'failed', error: { name: 'ApprovalRejected' } });
});

it('runs the upgrade to its end when the operator says yes after preflight', async () => {
  const { t, store, questions, out, outcome } = await upgrade([true, true]);

  expect(outcome).toMatchObject({ status: 'SUCCEEDED' });
  expect(questions).toHaveLength(2);
  expect(out.text()).toContain('▶ Wait for approval');
  const ccm = ccmDeploymentRef('aws');
  expect((await t.apps.readNamespacedDeployment(ccm)).status?.readyReplicas).toBeGreaterThan(0);
  const [run] = await store.list('c1');
  expect(run?.status).toBe('succeeded');
});
