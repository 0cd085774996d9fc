/**
 * --node-ip and a second network interface on both sides of the flip: the in-tree kubelet narrows its
 * provider's addresses and annotates its Node; the CCM's cloud-node controller narrows the cloud's to that
 * annotation as k8s.io/cloud-provider's helpers of its minor do, and leaves a Node whose node IP the cloud
 * does not list tainted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UNINITIALIZED_TAINT } from '../../lib/kube/well-known.ts';
import type { NodeAddress } from '../../lib/twin/cloud/model.ts';
import {
  annotatedNodeIPs,
  kubeletNodeIPs,
  narrowToNodeIPs,
  PROVIDED_NODE_IP,
} from '../../lib/twin/cloud/node-ip.ts';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import {
  type CloudHarness,
  startHarness as startCloud,
  until,
  writeCcm,
  writeNode,
} from './cloud-harness.ts';
import { type Harness, KUBELET_FLAGS, type Loose, miniSpec, startHarness, waitFor } from './nodes-harness.ts';

const EXTRA_ARGS = '/etc/default/kubelet';
const withSecondNic =
  (inTree: boolean) =>
  (spec: TwinSpec): TwinSpec => ({
    ...spec,
    latencies: { ...spec.latencies, leaseDuration: 300 },
    nodeGroups: spec.nodeGroups.map((g) => (g.name === 'worker' ? { ...g, secondNic: { inTree } } : g)),
  });

let nodes: Harness | undefined;
let cloud: CloudHarness | undefined;
afterEach(async () => {
  await nodes?.cleanup();
  await cloud?.stop();
  nodes = undefined;
  cloud = undefined;
});

const internalIPs = (node: Loose): string[] =>
  (node?.status?.addresses ?? [])
    .filter((a: { type: string }) => a.type === 'InternalIP')
    .map((a: { address: string }) => a.address);

function annotate(c: CloudHarness, name: string, value: string): KubeObject {
  const node = c.store.get('nodes', undefined, name);
  return c.store.update('nodes', {
    ...structuredClone(node),
    metadata: { ...node.metadata, annotations: { [PROVIDED_NODE_IP]: value } },
  });
}

const tainted = (n: KubeObject | undefined): boolean =>
  ((n?.spec as { taints?: { key: string }[] } | undefined)?.taints ?? []).some(
    (t) => t.key === UNINITIALIZED_TAINT,
  );

describe('the node-ip helpers', () => {
  it('read --node-ip as the kubelet does: unreadable entries ignored, a pair only where dual-stack is allowed', () => {
    expect(kubeletNodeIPs('10.0.0.011, bogus', 'aws', 26)).toEqual({ ips: ['10.0.0.11'] });
    expect(kubeletNodeIPs('10.0.0.1,fd00::1', 'aws', 30)).toMatchObject({
      error: /dual-stack not supported/,
    });
    expect(kubeletNodeIPs('10.0.0.1,fd00::1', 'external', 28)).toMatchObject({
      error: /dual-stack not supported/,
    });
    expect(kubeletNodeIPs('10.0.0.1,fd00::1', 'external', 29)).toEqual({ ips: ['10.0.0.1', 'fd00::1'] });
  });

  it('read the annotation as the CCM of each minor does', () => {
    expect(annotatedNodeIPs('10.0.0.1,fd00::1', 26)).toBeUndefined();
    expect(annotatedNodeIPs('10.0.0.1,fd00::1', 28)).toBeUndefined();
    expect(annotatedNodeIPs('10.0.0.1,fd00::1', 29)).toEqual(['10.0.0.1', 'fd00::1']);
    expect(annotatedNodeIPs('nonsense', 30)).toBeUndefined();
  });

  it('narrow to the node IP’s type only, and fail on an IP not listed', () => {
    const listed: NodeAddress[] = [
      { type: 'InternalIP', address: '10.0.0.11' },
      { type: 'InternalIP', address: '10.1.0.11' },
      { type: 'Hostname', address: 'worker-1' },
    ];
    expect(narrowToNodeIPs(['10.1.0.11'], listed)).toEqual([listed[1], listed[2]]);
    expect(narrowToNodeIPs(['10.9.9.9'], listed)).toBeUndefined();
  });
});

describe('an in-tree kubelet with --node-ip on a two-NIC instance', () => {
  it('reports one InternalIP and annotates its Node; without --node-ip it reports both', async () => {
    const spec = await miniSpec({
      edits: [{ group: 'worker', file: EXTRA_ARGS, edit: () => 'KUBELET_EXTRA_ARGS=--node-ip={{nodeIP}}\n' }],
    });
    nodes = await startHarness(withSecondNic(true)(spec));
    const worker: Loose = nodes.node('worker-1');
    const ip = nodes.cloud.placement('worker-1')?.ip;
    expect(internalIPs(worker)).toEqual([ip]);
    expect(worker.metadata.annotations[PROVIDED_NODE_IP]).toBe(ip);
    expect(
      nodes.cloud.instanceFor('worker-1')?.addresses.filter((a) => a.type === 'InternalIP'),
    ).toHaveLength(2);

    // The kubelet restarted without --node-ip: both addresses, and no annotation left behind.
    await nodes.write('worker-1', EXTRA_ARGS, 'KUBELET_EXTRA_ARGS=\n');
    await nodes.nodes.restartKubelet('worker-1');
    const after = await waitFor(() => {
      const n: Loose = nodes?.node('worker-1');
      return internalIPs(n).length === 2 && n;
    }, 'worker-1 with both addresses');
    expect(after.metadata.annotations[PROVIDED_NODE_IP]).toBeUndefined();
    expect(await nodes.read('worker-1', KUBELET_FLAGS)).toContain('--cloud-provider=aws');
  });
});

describe('the CCM’s cloud-node controller on a two-NIC instance', () => {
  it('initialises a node to its annotated node IP, and to every address without one', async () => {
    cloud = await startCloud(withSecondNic(false));
    const c = cloud;
    const ip = c.cloud.placement('worker-1')?.ip as string;
    writeNode(c.store, 'worker-1', { uninitialized: true });
    annotate(c, 'worker-1', ip);
    writeNode(c.store, 'worker-2', { uninitialized: true });
    writeCcm(c.store, 'aws-cloud-controller-manager', 'cp-1');
    const one = await until(() => {
      const n = c.store.tryGet('nodes', undefined, 'worker-1');
      return !tainted(n) && n;
    }, 'worker-1 initialised');
    expect(internalIPs(one)).toEqual([ip]);
    const both = await until(() => {
      const n = c.store.tryGet('nodes', undefined, 'worker-2');
      return !tainted(n) && n;
    }, 'worker-2 initialised');
    expect(internalIPs(both)).toEqual([
      c.cloud.placement('worker-2')?.ip,
      c.cloud.placement('worker-2')?.secondNicIp,
    ]);
  });

  it('leaves tainted a node whose node IP the cloud does not list', async () => {
    cloud = await startCloud(withSecondNic(true));
    const c = cloud;
    writeNode(c.store, 'worker-1', { uninitialized: true });
    annotate(c, 'worker-1', '10.9.9.9');
    writeNode(c.store, 'worker-2', { uninitialized: true });
    writeCcm(c.store, 'aws-cloud-controller-manager', 'cp-1');
    await until(() => !tainted(c.store.tryGet('nodes', undefined, 'worker-2')), 'worker-2 initialised');
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(tainted(c.store.tryGet('nodes', undefined, 'worker-1'))).toBe(true);
  });

  it('sets the addresses of initialised nodes as it starts leading', async () => {
    cloud = await startCloud(withSecondNic(false));
    const c = cloud;
    const providerID = c.cloud.instanceFor('worker-1')?.providerID as string;
    writeNode(c.store, 'worker-1', { providerID });
    writeCcm(c.store, 'aws-cloud-controller-manager', 'cp-1');
    const updated = await until(() => {
      const n = c.store.tryGet('nodes', undefined, 'worker-1');
      return internalIPs(n).length === 2 && n;
    }, 'worker-1 addressed');
    expect(internalIPs(updated)).toContain(c.cloud.placement('worker-1')?.secondNicIp);
  });
});
