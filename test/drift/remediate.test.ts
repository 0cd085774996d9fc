/**
 * The kubelet remediation as a plain function (lib/drift/remediate.ts), the one both `drift --remediate` and
 * the scheduled drift check run: a failure after the flip puts the kubelets back from the run's own backups
 * and ends the run rolled back; a cluster whose control plane is in-tree, or that another run holds, is
 * refused with nothing changed. And the drift workflow (state-machines/drift.ts, run by the local engine as
 * the schedule runs it on AWS) runs it for a cluster whose record asks for remediation, instead of
 * requesting an upgrade, and for no other.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { remediationRequestId } from '../../lib/drift/events.ts';
import type { FleetMember } from '../../lib/drift/fleet-file.ts';
import { runFleetDriftLocally } from '../../lib/drift/local-fleet.ts';
import { remediateKubelets } from '../../lib/drift/remediate.ts';
import { ClusterLockedError, KubeApiThrottledError, PreflightFailedError } from '../../lib/errors.ts';
import { localContext } from '../../lib/local/context.ts';
import type { StepContext } from '../../lib/steps/context.ts';
import { DRIFT_STATES } from '../../state-machines/drift.ts';
import { type E2E, nodeFiles, startE2E } from '../e2e/harness.ts';
import { eventually, FIXTURES, fixtureSpec, isReady } from '../twin/running-twin.ts';

const KUBELET_FLAGS = '/var/lib/kubelet/kubeadm-flags.env';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

function context(run: E2E): StepContext {
  return { ...localContext({ clients: run.t, waitMs: 10_000, pollMs: 10 }), store: run.store };
}

/** An upgraded twin, and a worker that joined it afterwards from the group's in-tree files. */
async function upgradedWithLateJoiner(): Promise<E2E> {
  e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
  expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
  e2e.t.twin.faults.add({ kind: 'nodeJoins', group: 'worker', after: 0 });
  const run = e2e;
  await eventually(
    async () => isReady((await run.t.core.readNode({ name: 'worker-3' }).catch(() => undefined)) as never),
    { what: 'worker-3 to join Ready' },
  );
  return e2e;
}

describe('the kubelet remediation', () => {
  it('puts the flipped kubelets back from its own backups when a later step fails, and ends rolled back', async () => {
    const run = await upgradedWithLateJoiner();
    const before = await run.t.readFile('worker-3', KUBELET_FLAGS);
    // The per-node check's taint is a node patch: refused, after worker-3 was flipped.
    run.t.twin.faults.add({ kind: 'error', rate: 1, code: 500, verb: 'patch', resource: 'nodes' });

    const failed = remediateKubelets(
      { clusterId: 'aws-mini', runId: 'fix-1', maxUnavailable: 1 },
      context(run),
    );
    await expect(failed).rejects.toBeInstanceOf(KubeApiThrottledError);

    expect(await run.t.readFile('worker-3', KUBELET_FLAGS)).toBe(before);
    await eventually(() => run.t.twin.nodes.kubelet('worker-3').ready, { what: 'worker-3 back Ready' });
    expect(run.t.twin.nodes.kubelet('worker-3').flags.get('cloud-provider')).toBe('aws');
    const record = await run.store.get('aws-mini', 'fix-1');
    expect(record).toMatchObject({
      kind: 'remediate',
      status: 'rolled-back',
      error: { name: 'KubeApiThrottled' },
    });
    expect(Object.keys(record?.steps ?? {})).toEqual(['kubelet/worker-3']);

    // Once the API takes node patches again, a new run flips it for good.
    run.t.twin.faults.clear('error');
    const done = await remediateKubelets(
      { clusterId: 'aws-mini', runId: 'fix-2', maxUnavailable: 1 },
      context(run),
    );
    expect(done.flipped).toEqual(['worker-3']);
    expect(run.t.twin.nodes.kubelet('worker-3').flags.get('cloud-provider')).toBe('external');
  });

  it('refuses a cluster whose control plane is in-tree, and one another run holds, changing nothing', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const run = e2e;
    const files = await nodeFiles(run.t);

    const inTree = remediateKubelets(
      { clusterId: 'aws-mini', runId: 'fix-1', maxUnavailable: 1 },
      context(run),
    );
    await expect(inTree).rejects.toBeInstanceOf(PreflightFailedError);
    await expect(inTree).rejects.toThrow(
      /flips kubelets only, and the control plane is in-tree .*: run an upgrade/,
    );
    expect(await run.store.get('aws-mini', 'fix-1')).toMatchObject({ status: 'failed' });

    await run.store.begin({ clusterId: 'aws-mini', runId: 'up-1', kind: 'upgrade' });
    const held = remediateKubelets(
      { clusterId: 'aws-mini', runId: 'fix-2', maxUnavailable: 1 },
      context(run),
    );
    await expect(held).rejects.toBeInstanceOf(ClusterLockedError);
    expect(await run.store.get('aws-mini', 'fix-2')).toBeUndefined();
    expect(await nodeFiles(run.t)).toEqual(files);
  });
});

describe('the scheduled drift check', () => {
  const member = (run: E2E, autoRemediate: boolean): FleetMember => ({
    clusterId: 'aws-mini',
    provider: 'aws',
    desiredMode: 'external',
    policy: { maxUnavailable: 1, autoRemediate },
    kubeconfig: run.t.twin.kubeconfigPath,
  });
  const fleetRun = (run: E2E, autoRemediate: boolean, runId: string) =>
    runFleetDriftLocally({
      members: [member(run, autoRemediate)],
      depth: 'deep',
      runId,
      store: run.store,
      waitMs: 10_000,
      pollMs: 10,
      retryIntervalOverrides: Object.fromEntries(Object.values(DRIFT_STATES).map((s) => [s, 20])),
    });

  it('flips kubelets back where the cluster record asks for remediation, a batch per run, and only reports them where not', async () => {
    const run = await upgradedWithLateJoiner();
    run.t.twin.faults.add({ kind: 'nodeJoins', group: 'worker', after: 0 });
    await eventually(
      async () => isReady((await run.t.core.readNode({ name: 'worker-4' }).catch(() => undefined)) as never),
      { what: 'worker-4 to join Ready' },
    );
    const provider = (node: string) => run.t.twin.nodes.kubelet(node).flags.get('cloud-provider');

    const reported = await fleetRun(run, false, 'drift-a');
    expect(reported.results[0]).toMatchObject({ status: 'drifted', counts: { critical: 2 } });
    expect(reported.results[0]).not.toHaveProperty('remediation');
    expect(reported.events.map((e) => e['detail-type'])).toEqual(['DriftDetected']);
    expect([provider('worker-3'), provider('worker-4')]).toEqual(['aws', 'aws']);

    // maxUnavailable 1: one kubelet per drift run, so that a run fits one invocation's time.
    for (const [driftRun, left] of [
      ['drift-b', 1],
      ['drift-c', 0],
    ] as const) {
      const remediated = await fleetRun(run, true, driftRun);
      const runId = remediationRequestId(driftRun, 'aws-mini');
      expect(remediated.results[0]).toMatchObject({
        status: 'drifted',
        remediation: 'kubelets',
        remediated: { runId, kubelets: 1, left },
      });
      // No upgrade requested: the workflow flipped the kubelet itself, under a run of its own.
      expect(remediated.events.map((e) => e['detail-type'])).toEqual(['DriftDetected']);
      expect(await run.store.get('aws-mini', runId)).toMatchObject({
        kind: 'remediate',
        status: 'succeeded',
      });
    }
    expect([provider('worker-3'), provider('worker-4')]).toEqual(['external', 'external']);

    expect((await fleetRun(run, true, 'drift-d')).results[0]).toMatchObject({ status: 'clean' });
  });
});
