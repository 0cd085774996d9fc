/**
 * No Node deleted until the CCM has seen every node: a CCM whose instance lookups fail for one worker
 * (cloudLookupFails, as with a wrong region or an unmappable name) must fail the upgrade, naming that node,
 * without ever deleting it, and the rollback must leave the cluster in-tree exactly as it started; a lookup
 * that fails only for a while (a transient credential failure) must only delay the upgrade.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UNINITIALIZED_TAINT } from '../../lib/kube/well-known.ts';
import type { Fault } from '../../lib/twin/spec.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { apiServersUnderTest, IN_PROCESS } from '../real-api.ts';
import { FIXTURES, fixtureSpec, type TestTwin } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, originalsOnly, startE2E } from './harness.ts';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

const WORKER = 'worker-2';

function lookupFails(fault: Pick<Extract<Fault, { kind: 'cloudLookupFails' }>, 'error' | 'duration'>): Fault {
  return { kind: 'cloudLookupFails', node: WORKER, by: 'external', after: 0, ...fault };
}

async function nodeNames(t: TestTwin): Promise<string[]> {
  return (await t.core.listNode()).items.map((n) => n.metadata?.name ?? '').sort();
}

/** The cluster's events of one reason about one node (cluster-scoped objects' events are in `default`). */
async function nodeEvents(t: TestTwin, reason: string, node: string) {
  const events = await t.core.listNamespacedEvent({ namespace: 'default' });
  return events.items.filter((e) => e.reason === reason && e.involvedObject.name === node);
}

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('a CCM that cannot look up one node', () => {
    it('fails the upgrade naming that node, deletes no Node, and ends in-tree with every node file as it started', async () => {
      e2e = await startE2E(
        await fixtureSpec(FIXTURES.awsMini, { overrides: { faults: [lookupFails({ error: 'notFound' })] } }),
        server,
      );
      const { t } = e2e;
      const start = await nodeFiles(t);
      const nodes = await nodeNames(t);

      const result = await e2e.upgrade();

      expect(result.error?.name, result.error?.cause).toBe('RolledBack');
      expect(result.error?.cause).toMatch(
        new RegExp(`the CCM did not initialise node ${WORKER} within .*providerID aws:///`),
      );
      expect((await e2e.store.get(result.clusterId, result.runId))?.status).toBe('rolled-back');
      expect(await nodeNames(t)).toEqual(nodes);
      expect(await nodeEvents(t, 'DeletingNode', WORKER)).toEqual([]);
      expect(originalsOnly(await nodeFiles(t), start)).toEqual(originalsOnly(start, start));
      const kcm = await t.core.readNamespacedPod({
        name: 'kube-controller-manager-cp-1',
        namespace: 'kube-system',
      });
      expect(kcm.spec?.containers[0]?.command).toContain('--cloud-provider=aws');
      await expect(
        t.apps.readNamespacedDeployment({ name: 'aws-cloud-controller-manager', namespace: 'kube-system' }),
      ).rejects.toThrow();
      for (const node of (await t.core.listNode()).items) {
        const keys = (node.spec?.taints ?? []).map((taint) => taint.key);
        expect(keys, node.metadata?.name).not.toContain(UNINITIALIZED_TAINT);
      }
      await t.twin.monitor.stop();
      // node-deleted among them: the twin records every Node deletion.
      expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    });
  });

  it('keeps the CCM’s lifecycle controller off while a rollback hands the cloud controllers back by leader migration', async () => {
    e2e = await startE2E(
      await fixtureSpec(FIXTURES.awsHaMini, { overrides: { faults: [lookupFails({ error: 'notFound' })] } }),
      server,
    );
    const { t } = e2e;
    const nodes = await nodeNames(t);
    let handedBack: Promise<string[]> | undefined;
    const result = await e2e.upgrade({
      onEvent: (event) => {
        if (
          event.type === 'StateEntered' &&
          event.state.name === UPGRADE_STATES.rollbackControlPlaneMigrating
        ) {
          handedBack ??= t.apps
            .readNamespacedDeployment({ name: 'aws-cloud-controller-manager', namespace: 'kube-system' })
            .then((d) => d.spec?.template.spec?.containers[0]?.args ?? []);
        }
      },
    });

    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(result.error?.cause).toMatch(`the CCM did not initialise node ${WORKER}`);
    const args = await handedBack;
    expect(args).toContain('--enable-leader-migration=true');
    expect(args).toContain('--controllers=*,-cloud-node-lifecycle');
    expect(await nodeNames(t)).toEqual(nodes);
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  }, 90_000);

  it('stops a run whose Node is deleted meanwhile, naming it, and rolls back', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
    const { t } = e2e;
    let deleted: Promise<unknown> | undefined;
    const result = await e2e.upgrade({
      onEvent: (event) => {
        // Someone (a cloud controller, an operator) deletes the Node once its kubelet flipped, while it runs
        // on (a kubelet restarted after that would register it again).
        if (
          event.type === 'StateEntered' &&
          event.state.name === UPGRADE_STATES.initialiseFlipped &&
          (event.state.input as { node?: string }).node === WORKER
        ) {
          deleted ??= t.core.deleteNode({ name: WORKER });
        }
      },
    });
    await deleted;

    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(result.error?.cause).toMatch(`node ${WORKER} was deleted during the run`);
    // Its kubelet, restored in-tree and restarted, registered it again.
    expect(await nodeNames(t)).toContain(WORKER);
    await t.twin.monitor.stop();
    const recorded = t.twin.monitor.violations().filter((v) => v.kind === 'node-deleted');
    expect(recorded.map((v) => v.detail)).toEqual([{ node: WORKER }]);
  });
});

// The twin's CCM failing its lookups for 20 s, then not: a matter of its cloud model and the run's retries, which the real
// server only makes slower.
describe.each([IN_PROCESS])('on the $name', (server) => {
  describe('a CCM that cannot look up one node', () => {
    it('only delays the upgrade when the lookups fail for 20 s (unauthorized): it finishes', async () => {
      const began = Date.now();
      e2e = await startE2E(
        await fixtureSpec(FIXTURES.awsMini, {
          overrides: { faults: [lookupFails({ error: 'unauthorized', duration: 20_000 })] },
        }),
        server,
      );
      const { t } = e2e;
      const nodes = await nodeNames(t);

      // Each node gets the SLO's wait: long enough for the window to close.
      const result = await e2e.upgrade({ waitMs: 60_000 });

      expect(result.status, result.error?.cause).toBe('SUCCEEDED');
      expect(await nodeNames(t)).toEqual(nodes);
      // The CCM initialised the worker after the window closed: it was tainted, and waited for, meanwhile.
      const synced = await nodeEvents(t, 'Synced', WORKER);
      const last = Math.max(...synced.map((e) => Date.parse(String(e.lastTimestamp))));
      // Events carry whole seconds.
      expect(last).toBeGreaterThanOrEqual(began + 20_000 - 1000);
      const ccm = await t.apps.readNamespacedDeployment({
        name: 'aws-cloud-controller-manager',
        namespace: 'kube-system',
      });
      const args = ccm.spec?.template.spec?.containers[0]?.args ?? [];
      expect(args.filter((a) => a.startsWith('--controllers'))).toEqual([]);
      await t.twin.monitor.stop();
      expect(t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
    }, 90_000);
  });
});
