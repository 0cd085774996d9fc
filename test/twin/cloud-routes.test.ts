/**
 * The twin's node IPAM and route controller: run by the controller manager that leads, each only where its
 * own flags say so, against the cloud's route table.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../lib/twin/store.ts';
import {
  type CloudHarness,
  kubeadmKcmCommand,
  lease,
  startHarness,
  until,
  writeCcm,
  writeKcm,
  writeNode,
} from './cloud-harness.ts';

let h: CloudHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function harness(): Promise<CloudHarness> {
  h = await startHarness((spec) => ({ ...spec, latencies: { ...spec.latencies, leaseDuration: 300 } }));
  return h;
}

const podCidr = (node: KubeObject | undefined): string | undefined =>
  (node?.spec as { podCIDR?: string } | undefined)?.podCIDR;
const routesOn = (argv: string[]): string[] => argv.filter((a) => a !== '--configure-cloud-routes=false');
const withoutCloud = (argv: string[]): string[] => argv.filter((a) => !a.startsWith('--cloud'));

describe('node IPAM and routes in the twin', () => {
  it('has an in-tree KCM allocate podCIDRs and route them, and drop the route of a node that goes', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(routesOn));
    writeNode(t.store, 'worker-1');
    writeNode(t.store, 'worker-2');
    await until(() => t.cloud.routes().length === 2, 'a route per node');
    const cidrs = ['worker-1', 'worker-2'].map((n) => podCidr(t.store.tryGet('nodes', undefined, n)));
    expect(new Set(cidrs).size).toBe(2);
    expect(
      t.cloud
        .routes()
        .map((r) => [r.node, r.destinationCidr])
        .sort(),
    ).toEqual([
      ['worker-1', cidrs[0]],
      ['worker-2', cidrs[1]],
    ]);
    t.store.delete('nodes', undefined, 'worker-2');
    await until(() => t.cloud.routes().length === 1, 'the gone node’s route deleted');
    expect(t.cloud.routes()[0]?.node).toBe('worker-1');
  });

  it('allocates but routes nothing where KCM says --configure-cloud-routes=false, or runs no in-tree cloud', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    writeNode(t.store, 'worker-1');
    await until(() => podCidr(t.store.tryGet('nodes', undefined, 'worker-1')), 'a podCIDR');
    t.store.delete('pods', 'kube-system', 'kube-controller-manager-cp-1');
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand((argv) => routesOn(withoutCloud(argv))));
    writeNode(t.store, 'worker-2');
    await until(
      () => podCidr(t.store.tryGet('nodes', undefined, 'worker-2')),
      'the external KCM to allocate',
    );
    expect(t.cloud.routes()).toEqual([]);
  });

  it('has a CCM route what KCM allocated when its flags say so, with its --cluster-cidr', async () => {
    const t = await harness();
    writeKcm(
      t.store,
      'cp-1',
      await kubeadmKcmCommand((argv) => [...withoutCloud(argv), '--cloud-provider=external']),
    );
    writeCcm(t.store, 'ccm', 'cp-1', ['--configure-cloud-routes=true', '--cluster-cidr=192.168.0.0/16']);
    await until(() => lease(t.store, 'cloud-controller-manager')?.holderIdentity, 'the CCM to lead');
    writeNode(t.store, 'worker-1');
    const [route] = await until(() => t.cloud.routes().length > 0 && t.cloud.routes(), 'the CCM’s route');
    expect(route?.destinationCidr).toBe(podCidr(t.store.tryGet('nodes', undefined, 'worker-1')));
  });
});
