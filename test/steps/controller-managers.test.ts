/** Which control-plane nodes' kube-controller-managers run as wanted, read from the AWS twin's mirror pods. */
import { describe, expect, it } from 'vitest';
import { isControlPlane, listNodes, nodeName } from '../../lib/steps/cluster.ts';
import { cloudProviderOf, controllerManagersNot } from '../../lib/steps/controller-managers.ts';
import { runsLeaderMigration } from '../../lib/steps/leader-migration.ts';
import { FIXTURES, fixtureTwins } from '../twin/running-twin.ts';

const startTwin = fixtureTwins();

describe('controllerManagersNot', () => {
  it('names the control-plane nodes whose kube-controller-manager is missing or not as wanted, no worker', async () => {
    const t = await startTwin(FIXTURES.awsMini);
    const ctx = { clients: t };
    const all = await listNodes(ctx);
    const controlPlane = all.filter(isControlPlane).map(nodeName);
    expect(controlPlane.length).toBeGreaterThan(0);
    const nodes = Object.fromEntries([
      ...all.map((n) => [nodeName(n), { role: isControlPlane(n) ? 'control-plane' : 'worker' }]),
      // Recorded by the snapshot, gone since: no mirror pod to read.
      ['cp-gone', { role: 'control-plane' }],
    ]) as Parameters<typeof controllerManagersNot>[1]['nodes'];

    expect(await controllerManagersNot(ctx, { nodes }, (pod) => cloudProviderOf(pod) === 'aws')).toEqual([
      'cp-gone',
    ]);
    expect(await controllerManagersNot(ctx, { nodes }, (pod) => cloudProviderOf(pod) !== 'aws')).toEqual([
      ...controlPlane,
      'cp-gone',
    ]);
    expect(await controllerManagersNot(ctx, { nodes }, runsLeaderMigration)).toEqual([
      ...controlPlane,
      'cp-gone',
    ]);
  });
});
