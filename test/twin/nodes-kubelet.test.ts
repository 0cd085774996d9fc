/**
 * Kubelets of the node simulation: node files, Node registration per --cloud-provider, kubelet restarts
 * with re-read flags, a node that never returns, and a kubelet that refuses its own flags.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseTwinSpec, type TwinSpec } from '../../lib/twin/spec.ts';
import {
  condition,
  type Harness,
  isReady,
  KAS,
  KUBELET_FLAGS,
  kubeletExternal,
  kubeletNoCloud,
  type Loose,
  miniSpec,
  startHarness,
  waitFor,
} from './nodes-harness.ts';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

function taintKeys(node: Loose): string[] {
  return (node?.spec?.taints ?? []).map((t: { key: string }) => t.key);
}

describe('node files', () => {
  it('writes each node its group’s files rendered for it, and keeps an existing node directory', async () => {
    h = await startHarness(await miniSpec());
    const kas = await h.read('cp-1', KAS);
    expect(kas).toContain(`--advertise-address=${h.cloud.placement('cp-1')?.ip}`);
    expect(kas).not.toContain('{{nodeIP}}');
    expect(await h.read('worker-2', KUBELET_FLAGS)).toContain('--cloud-provider=aws');
    await expect(h.read('worker-1', KAS)).rejects.toThrow(/ENOENT/);

    await h.write('worker-1', KUBELET_FLAGS, 'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n');
    await h.stop();
    const again = await startHarness(h.ctx.spec, h.stateDir);
    h = again;
    expect(await again.read('worker-1', KUBELET_FLAGS)).toBe(
      'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n',
    );
    expect(again.nodes.kubelet('worker-1').flags.get('cloud-provider')).toBe('external');
  });
});

describe('registration', () => {
  it('registers every node Ready; an in-tree kubelet sets the providerID, cloud addresses and topology itself', async () => {
    h = await startHarness(await miniSpec());
    for (const name of ['cp-1', 'worker-1', 'worker-2']) {
      const node: Loose = h.node(name);
      const instance = h.cloud.instanceFor(name);
      expect(node.spec.providerID).toBe(instance?.providerID);
      expect(node.status.addresses).toEqual(instance?.addresses);
      expect(node.metadata.labels).toMatchObject({
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
        'topology.kubernetes.io/region': 'us-east-1',
        'topology.kubernetes.io/zone': instance?.zone,
        'node.kubernetes.io/instance-type': instance?.instanceType,
      });
      expect(condition(node, 'Ready')).toMatchObject({ status: 'True', reason: 'KubeletReady' });
      for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) {
        expect(condition(node, type)?.status).toBe('False');
      }
      expect(node.status.nodeInfo).toMatchObject({ kubeletVersion: 'v1.26.15', operatingSystem: 'linux' });
      expect(node.status.daemonEndpoints.kubeletEndpoint.Port).toBe(10250);
      expect(taintKeys(node)).not.toContain(UNINITIALIZED);
      const lease: Loose = h.store.tryGet('leases.coordination.k8s.io', 'kube-node-lease', name);
      expect(lease.spec.holderIdentity).toBe(name);
      expect(lease.metadata.ownerReferences[0]).toMatchObject({ kind: 'Node', uid: node.metadata.uid });
    }
    const cp: Loose = h.node('cp-1');
    expect(cp.metadata.labels[CONTROL_PLANE]).toBe('');
    // As kube-apiserver's TaintNodesByCondition admission leaves a new Node (no node lifecycle controller runs here).
    expect(cp.spec.taints).toEqual([
      { key: CONTROL_PLANE, effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
    ]);
    expect(taintKeys(h.node('worker-1'))).not.toContain(CONTROL_PLANE);
  });

  it('taints a node whose kubelet registers with --cloud-provider=external and leaves its cloud fields to a CCM', async () => {
    h = await startHarness(
      await miniSpec({ edits: [{ group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal }] }),
    );
    const worker: Loose = h.node('worker-1');
    expect(worker.spec.taints).toContainEqual({ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' });
    expect(worker.spec.providerID).toBeUndefined();
    expect(worker.metadata.labels['topology.kubernetes.io/zone']).toBeUndefined();
    expect(worker.status.addresses).toEqual([
      { type: 'InternalIP', address: h.cloud.placement('worker-1')?.ip },
      { type: 'Hostname', address: 'worker-1' },
    ]);
  });

  it('gives a node whose kubelet has no --cloud-provider neither taint nor providerID', async () => {
    h = await startHarness(
      await miniSpec({ edits: [{ group: 'worker', file: KUBELET_FLAGS, edit: kubeletNoCloud }] }),
    );
    const worker: Loose = h.node('worker-2');
    expect(worker.spec.taints).toEqual([{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }]);
    expect(worker.spec.providerID).toBeUndefined();
    expect(h.nodes.kubelet('worker-2').flags.has('cloud-provider')).toBe(false);
  });
});

describe('kubelet restarts', () => {
  it('goes NotReady, comes back with re-read flags, and keeps the existing Node as it was', async () => {
    h = await startHarness(await miniSpec());
    const before: Loose = h.node('worker-1');
    await h.write('worker-1', KUBELET_FLAGS, kubeletExternal(await h.read('worker-1', KUBELET_FLAGS)));
    const restarted = h.nodes.restartKubelet('worker-1');
    expect(h.nodes.kubelet('worker-1').ready).toBe(false);
    await restarted;
    expect(condition(h.node('worker-1'), 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
    });
    await waitFor(() => isReady(h?.node('worker-1')), 'worker-1 Ready again');
    const view = h.nodes.kubelet('worker-1');
    expect(view).toMatchObject({ ready: true, restarts: 1 });
    expect(view.flags.get('cloud-provider')).toBe('external');
    const after: Loose = h.node('worker-1');
    expect(after.spec).toEqual(before.spec);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.labels).toEqual(before.metadata.labels);
  });

  it('keeps static pods running while the kubelet restarts (containers outlive it)', async () => {
    h = await startHarness(await miniSpec());
    await h.nodes.restartKubelet('cp-1');
    expect(h.nodes.kubelet('cp-1').ready).toBe(false);
    expect(h.nodes.apiServerReady()).toBe(true);
    expect(isReady(h.pod('kube-system', 'kube-apiserver-cp-1'))).toBe(true);
    await waitFor(() => h?.nodes.kubelet('cp-1').ready, 'cp-1 kubelet back');
  });

  it('leaves a node NotReady when it never comes back (fault)', async () => {
    h = await startHarness(
      await miniSpec({ overrides: { faults: [{ kind: 'nodeNeverReturns', node: 'worker-2' }] } }),
    );
    await h.nodes.restartKubelet('worker-2');
    const latency = h.ctx.spec.latencies.kubeletRestart;
    await new Promise((resolve) => setTimeout(resolve, latency * 5));
    expect(h.nodes.kubelet('worker-2').ready).toBe(false);
    expect(isReady(h.node('worker-2'))).toBe(false);
    h.faults.clear('nodeNeverReturns');
    await h.nodes.restartKubelet('worker-2');
    await waitFor(() => isReady(h?.node('worker-2')), 'worker-2 back once the fault is gone');
  });
});

describe('the name a kubelet registers as', () => {
  const hostnamed = (overrides: Partial<TwinSpec> = {}) =>
    miniSpec({ overrides: { ...overrides } }).then((spec) =>
      parseTwinSpec({
        ...spec,
        nodeGroups: spec.nodeGroups.map((g) => ({ ...g, hostname: 'IP-{ip-dashed}' })),
      }),
    );

  it('off in-tree AWS takes its host’s name, lowercased: a second Node registers and its own goes silent', async () => {
    h = await startHarness(await hostnamed());
    expect(h.nodes.kubelet('worker-1')).toMatchObject({ ready: true, registeredAs: 'worker-1' });
    const host = h.cloud.placement('worker-1')?.hostname.toLowerCase() as string;
    await h.write('worker-1', KUBELET_FLAGS, 'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n');
    await h.nodes.restartKubelet('worker-1');
    await waitFor(() => h?.node(host), `a Node named ${host}`);
    expect(h.nodes.kubelet('worker-1')).toMatchObject({ ready: false, registeredAs: host });
    expect(isReady(h.node('worker-1'))).toBe(false);
    expect(isReady(h.node(host))).toBe(true);
    expect(taintKeys(h.node(host))).toContain(UNINITIALIZED);
  });

  it('keeps its Node under --hostname-override, and comes back to it when pinned again', async () => {
    h = await startHarness(await hostnamed());
    const external = 'KUBELET_KUBEADM_ARGS="--cloud-provider=external --hostname-override=worker-1"\n';
    await h.write('worker-1', KUBELET_FLAGS, external);
    await h.nodes.restartKubelet('worker-1');
    await waitFor(() => h?.nodes.kubelet('worker-1').ready, 'worker-1 back');
    expect(h.nodes.kubelet('worker-1').registeredAs).toBe('worker-1');
    expect(
      await h.nodes.join('worker', { files: { [KUBELET_FLAGS]: external.replace('worker-1', 'worker-3') } }),
    ).toBe('worker-3');
    await expect(
      h.nodes.join('worker', {
        files: { [KUBELET_FLAGS]: 'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n' },
      }),
    ).rejects.toThrow(
      /node worker-4: its kubelet would register as ip-10-0-0-\d+ \(its host is IP-10-0-0-\d+\)/,
    );
  });

  it('refuses a spec whose hosts would register other Nodes from the start (in-tree GCE names a Node after its host)', async () => {
    const gce = await hostnamed();
    const spec = parseTwinSpec({ ...gce, cloud: { ...gce.cloud, provider: 'gce' } });
    const files = (g: (typeof spec.nodeGroups)[number]) => ({
      ...g.files,
      [KUBELET_FLAGS]: 'KUBELET_KUBEADM_ARGS="--cloud-provider=gce"\n',
    });
    await expect(
      startHarness(
        parseTwinSpec({ ...spec, nodeGroups: spec.nodeGroups.map((g) => ({ ...g, files: files(g) })) }),
      ),
    ).rejects.toThrow(/its kubelet would register as ip-10-0-0-\d+ .* --hostname-override=/);
  });
});

describe('a kubelet that refuses its own flags', () => {
  it('does not come back from a restart with an in-tree provider its version removed', async () => {
    h = await startHarness(
      await miniSpec({
        overrides: { kubernetesVersion: 'v1.27.16' },
        edits: [
          { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal },
          { group: 'cp', file: KUBELET_FLAGS, edit: kubeletExternal },
          { group: 'cp', file: KAS, edit: (t) => t.replace(/^ *- --cloud-(provider|config)=.*\n/gm, '') },
        ],
      }),
    );
    expect(h.nodes.kubelet('worker-1').ready).toBe(true);
    await h.write('worker-1', KUBELET_FLAGS, 'KUBELET_KUBEADM_ARGS="--cloud-provider=aws"\n');
    await h.nodes.restartKubelet('worker-1');
    const latency = h.ctx.spec.latencies.kubeletRestart;
    await new Promise((resolve) => setTimeout(resolve, latency * 5));
    expect(h.nodes.kubelet('worker-1')).toMatchObject({ ready: false, restarts: 1 });
    expect(h.nodes.kubelet('worker-1').flags.get('cloud-provider')).toBe('aws');
    expect(isReady(h.node('worker-1'))).toBe(false);
  });

  it('never registers its node when it cannot start at all', async () => {
    h = await startHarness(
      await miniSpec({
        overrides: { kubernetesVersion: 'v1.27.16' },
        edits: [
          { group: 'cp', file: KUBELET_FLAGS, edit: kubeletExternal },
          { group: 'cp', file: KAS, edit: (t) => t.replace(/^ *- --cloud-(provider|config)=.*\n/gm, '') },
        ],
      }),
    );
    expect(h.node('cp-1')).toBeDefined();
    expect(h.node('worker-1')).toBeUndefined();
    expect(h.nodes.kubelet('worker-1').ready).toBe(false);
  });

  it('throws for a node the twin does not have', async () => {
    h = await startHarness(await miniSpec());
    expect(() => h?.nodes.kubelet('nope')).toThrow(/no node nope/);
    await expect(h.nodes.restartKubelet('nope')).rejects.toThrow(/no node nope/);
  });
});
