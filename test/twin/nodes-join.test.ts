/**
 * Nodes that join a running twin (an autoscaler, a replaced instance), driven through twin.nodes.join and
 * observed only through the real @kubernetes/client-node: they register as start-up nodes do, the
 * workload controllers and the scheduler use them, a CCM initialises an external one, and the invariant
 * monitor records one nothing initialises.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidInputError } from '../../lib/errors.ts';
import { applyObjects } from '../../lib/kube/apply.ts';
import { UNINITIALIZED_TAINT } from '../../lib/kube/well-known.ts';
import { renderCcmObjects } from '../../lib/providers/render.ts';
import { hostPath } from '../../lib/twin/context.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import {
  CLOUD_CONF,
  dropCloudFlags,
  eventually,
  FIXTURES,
  fixtureSpec,
  fixtureTwins,
  isReady,
  KCM,
  KUBELET_FLAGS,
  kubeletExternal,
  type TestTwin,
} from './running-twin.ts';

const KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';

const start = fixtureTwins();

/** The worker group's kubelet flags file, switched to --cloud-provider=external (a new launch template). */
function externalWorkerFlags(t: TestTwin): Record<string, string> {
  const text = t.twin.spec.nodeGroups.find((g) => g.name === 'worker')?.files[KUBELET_FLAGS];
  if (text === undefined) throw new Error('the fixture worker group has no kubeadm-flags.env');
  return { [KUBELET_FLAGS]: kubeletExternal(text) };
}

/** Start watching the store for the Node a kubelet creates: the object as registered, before any controller. */
function registrations(t: TestTwin): Map<string, KubeObject> {
  const seen = new Map<string, KubeObject>();
  const unsubscribe = t.twin.store.subscribe((event) => {
    if (event.key === 'nodes' && event.type === 'ADDED') seen.set(event.object.metadata.name, event.object);
  });
  onTestFinished(unsubscribe);
  return seen;
}

const hasUninitializedTaint = (node: { spec?: { taints?: { key: string }[] } }): boolean =>
  node.spec?.taints?.some((taint) => taint.key === UNINITIALIZED_TAINT) ?? false;

describe('a node that joins a running twin', () => {
  it('registers Ready under the next free name of its group, with the providerID its cloud instance has', async () => {
    const t = await start(FIXTURES.awsMini);
    // What an earlier twin on this state dir left of a worker-3 that joined it: the new disk is fresh.
    const stale = hostPath(t.twin.stateDir, 'worker-3', KUBELET_FLAGS);
    await mkdir(path.dirname(stale), { recursive: true });
    await writeFile(stale, 'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n');
    await writeFile(hostPath(t.twin.stateDir, 'worker-3', '/leftover'), 'x');
    const name = await t.twin.nodes.join('worker');
    expect(name).toBe('worker-3');
    expect(existsSync(hostPath(t.twin.stateDir, name, '/leftover'))).toBe(false);

    // Registered before join resolves, as an in-tree kubelet registers: from its own cloud instance.
    const node = await t.core.readNode({ name });
    const instance = t.twin.cloud.instanceFor(name);
    expect(instance).toBeDefined();
    expect(isReady(node as never)).toBe(true);
    expect(node.spec?.providerID).toBe(instance?.providerID);
    expect(node.spec?.taints ?? []).toEqual([]);
    expect(node.metadata?.labels?.['topology.kubernetes.io/zone']).toBe(instance?.zone);
    expect(node.status?.addresses).toEqual(instance?.addresses);
    const lease = await t.coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' });
    expect(lease.metadata?.ownerReferences?.[0]?.uid).toBe(node.metadata?.uid);
    expect(t.twin.nodes.kubelet(name)).toMatchObject({ ready: true, restarts: 0 });
    expect(t.twin.nodes.kubelet(name).flags.get('cloud-provider')).toBe('aws');

    // The group's files, rendered for this node.
    const group = t.twin.spec.nodeGroups.find((g) => g.name === 'worker');
    for (const [file, text] of Object.entries(group?.files ?? {}))
      expect(await t.readFile(name, file)).toBe(text);

    // Concurrent joins each take their own name, IP and instance.
    const more = await Promise.all([t.twin.nodes.join('worker'), t.twin.nodes.join('worker')]);
    expect(more).toEqual(['worker-4', 'worker-5']);
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual([
      'cp-1',
      'worker-1',
      'worker-2',
      'worker-3',
      'worker-4',
      'worker-5',
    ]);
    const ips = nodes.map((n) => n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address);
    expect(new Set(ips).size).toBe(nodes.length);
    expect(new Set(nodes.map((n) => n.spec?.providerID)).size).toBe(nodes.length);
  });

  it('registers tainted with no providerID when external, and a running CCM initialises it', async () => {
    // Mid-migration: the CCM runs, KCM has left the cloud loops, the old kubelets are still in-tree.
    const t = await start(FIXTURES.awsMini, { edits: [{ group: 'cp', file: KCM, edit: dropCloudFlags }] });
    await applyObjects(
      t,
      renderCcmObjects({
        provider: 'aws',
        kubernetesVersion: t.twin.spec.kubernetesVersion,
        clusterName: 'kubernetes',
        cloudConfig: await t.readFile('cp-1', CLOUD_CONF),
        replicas: 1,
      }),
    );
    await eventually(() => t.twin.controllers.active().some((c) => c.kind === 'cloud-controller-manager'), {
      what: 'the CCM to run the cloud loops',
    });
    const registered = registrations(t);

    const files = externalWorkerFlags(t);
    const name = await t.twin.nodes.join('worker', { files });
    expect(await t.readFile(name, KUBELET_FLAGS)).toBe(files[KUBELET_FLAGS]);
    expect(await t.readFile(name, KUBELET_CONFIG)).toBeTruthy();
    expect(t.twin.nodes.kubelet(name).flags.get('cloud-provider')).toBe('external');
    const first = registered.get(name) as { spec?: { providerID?: string; taints?: { key: string }[] } };
    expect(first).toBeDefined();
    expect(hasUninitializedTaint(first)).toBe(true);
    expect(first.spec?.providerID).toBeUndefined();

    const node = await eventually(
      async () => {
        const n = await t.core.readNode({ name });
        return !hasUninitializedTaint(n as never) && n;
      },
      { what: `${name} initialised by the CCM` },
    );
    const instance = t.twin.cloud.instanceFor(name);
    expect(node.spec?.providerID).toBe(instance?.providerID);
    expect(node.metadata?.labels?.['topology.kubernetes.io/zone']).toBe(instance?.zone);
    expect(node.metadata?.labels?.['topology.kubernetes.io/region']).toBe('us-east-1');
    expect(node.status?.addresses).toEqual(instance?.addresses);
    expect(isReady(node as never)).toBe(true);
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations()).toEqual([]);
  });

  it('stays tainted when external and no cloud controller runs, and the invariant monitor records it', async () => {
    const t = await start(FIXTURES.awsMini, { edits: [{ group: 'cp', file: KCM, edit: dropCloudFlags }] });
    await eventually(() => t.twin.controllers.active().length === 0, { what: 'no cloud controller' });
    const joinedAt = Date.now();
    const name = await t.twin.nodes.join('worker', { files: externalWorkerFlags(t) });

    // Many times nodeInit and the controllers' retry period: nothing would initialise it by now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const node = await t.core.readNode({ name });
    expect(hasUninitializedTaint(node as never)).toBe(true);
    expect(node.spec?.providerID).toBeUndefined();
    expect(isReady(node as never)).toBe(true);

    await t.twin.monitor.stop();
    const found = t.twin.monitor
      .violations()
      .filter((v) => v.kind === 'uninitialized-without-cloud-controller');
    expect(found).toHaveLength(1);
    expect(found[0]?.detail).toEqual({ nodes: [name], nodeCount: 1 });
    expect(Date.parse(found[0]?.start ?? '')).toBeGreaterThanOrEqual(joinedAt);
    expect(found[0]?.durationMs).toBeGreaterThanOrEqual(250);
  });

  it('gets a DaemonSet pod, and the scheduler places a pod that only it can take', async () => {
    const t = await start(FIXTURES.awsMini);
    await t.apps.createNamespacedDaemonSet({
      namespace: 'default',
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent' } },
            spec: { containers: [{ name: 'main', image: 'agent:1' }] },
          },
        },
      },
    });
    const daemonPods = async () =>
      (await t.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=agent' })).items;
    await eventually(async () => (await daemonPods()).filter((p) => isReady(p as never)).length === 2, {
      what: 'a Ready daemon pod on each worker',
    });
    // Waits for a node that does not exist yet: Pending, unschedulable.
    await t.core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'pinned' },
        spec: {
          nodeSelector: { 'kubernetes.io/hostname': 'worker-3' },
          containers: [{ name: 'main', image: 'app:1' }],
        },
      },
    });
    await eventually(
      async () => {
        const pod = await t.core.readNamespacedPod({ name: 'pinned', namespace: 'default' });
        return pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable');
      },
      { what: 'the pinned pod to be unschedulable' },
    );

    const name = await t.twin.nodes.join('worker');
    expect(name).toBe('worker-3');
    const onNew = await eventually(
      async () => (await daemonPods()).find((p) => p.spec?.nodeName === name && isReady(p as never)),
      { what: `a Ready daemon pod on ${name}` },
    );
    expect(onNew.status?.hostIP).toBe(t.twin.cloud.placement(name)?.ip);
    const pinned = await eventually(
      async () => {
        const pod = await t.core.readNamespacedPod({ name: 'pinned', namespace: 'default' });
        return isReady(pod as never) && pod;
      },
      { what: 'the pinned pod Running on the new node' },
    );
    expect(pinned.spec?.nodeName).toBe(name);
    await eventually(
      async () => {
        const ds = await t.apps.readNamespacedDaemonSet({ name: 'agent', namespace: 'default' });
        return ds.status?.desiredNumberScheduled === 3 && ds.status.numberReady === 3;
      },
      { what: 'the DaemonSet to count the new node' },
    );
  });

  it('runs and watches its static pods when it is a control-plane node', async () => {
    const t = await start(FIXTURES.awsMini);
    const name = await t.twin.nodes.join('cp');
    expect(name).toBe('cp-2');
    const node = await t.core.readNode({ name });
    expect(node.spec?.taints).toContainEqual(
      expect.objectContaining({ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }),
    );
    for (const component of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
      const pod = await eventually(
        async () => {
          const p = await t.core.readNamespacedPod({
            name: `${component}-${name}`,
            namespace: 'kube-system',
          });
          return isReady(p as never) && p;
        },
        { what: `${component} Ready on ${name}` },
      );
      expect(pod.spec?.nodeName).toBe(name);
    }
    // Its manifests are watched like every node's: a changed one restarts its pod with the new spec.
    const kcmPod = () =>
      t.core.readNamespacedPod({ name: `kube-controller-manager-${name}`, namespace: 'kube-system' });
    const before = await kcmPod();
    await t.writeFile(name, KCM, dropCloudFlags(await t.readFile(name, KCM)));
    const after = await eventually(
      async () => {
        const p = await kcmPod();
        return p.metadata?.uid !== before.metadata?.uid && isReady(p as never) && p;
      },
      { what: `the new kube-controller-manager mirror pod on ${name}` },
    );
    expect(after.spec?.containers[0]?.command?.some((arg) => arg.startsWith('--cloud-provider'))).toBe(false);
  });

  it('joins by a nodeJoins fault when its time comes, once, with the files the spec gives its group', async () => {
    const t = await start(FIXTURES.awsMini);
    // The nodes' own files move on (a migration); the group's, the launch template, do not.
    await t.writeFile(
      'worker-1',
      KUBELET_FLAGS,
      kubeletExternal(await t.readFile('worker-1', KUBELET_FLAGS)),
    );
    t.twin.faults.add({ kind: 'nodeJoins', group: 'worker', after: 600_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await t.core.listNode()).items).toHaveLength(3);

    t.twin.faults.add({ kind: 'nodeJoins', group: 'worker', after: 0 });
    const node = await eventually(() => t.core.readNode({ name: 'worker-3' }), { what: 'worker-3 to join' });
    const group = t.twin.spec.nodeGroups.find((g) => g.name === 'worker');
    expect(await t.readFile('worker-3', KUBELET_FLAGS)).toBe(group?.files[KUBELET_FLAGS]);
    // Its kubelet runs the template's in-tree provider and registers from its own cloud instance, untainted.
    expect(t.twin.nodes.kubelet('worker-3').flags.get('cloud-provider')).toBe('aws');
    expect(node.spec?.providerID).toBe(t.twin.cloud.instanceFor('worker-3')?.providerID);
    expect(hasUninitializedTaint(node as never)).toBe(false);
    // Once: the fault stays listed, and no second node joins for it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await t.core.listNode()).items).toHaveLength(4);
  });

  it('refuses a nodeJoins fault for a group the spec does not have', async () => {
    await expect(
      fixtureSpec(FIXTURES.awsMini, {
        overrides: { faults: [{ kind: 'nodeJoins', group: 'gpu', after: 0 }] },
      }),
    ).rejects.toThrow(/faults\[0\]\.group: no node group gpu \(the spec's groups: cp, worker\)/);
  });

  it('is refused for an unknown group, a bad file path or a stopped twin, and nothing joins', async () => {
    const t = await start(FIXTURES.awsMini);
    const placed = t.twin.cloud.placements().length;
    await expect(t.twin.nodes.join('gpu')).rejects.toThrow(
      new InvalidInputError('the twin has no node group gpu (its groups: cp, worker)'),
    );
    const bad = t.twin.nodes.join('worker', { files: { 'etc/relative': 'x' } });
    await expect(bad).rejects.toBeInstanceOf(InvalidInputError);
    await expect(bad).rejects.toThrow(/etc\/relative: file paths must be absolute/);
    expect(t.twin.cloud.placements()).toHaveLength(placed);
    expect((await t.core.listNode()).items).toHaveLength(placed);

    await t.twin.stop();
    await expect(t.twin.nodes.join('worker')).rejects.toBeInstanceOf(InvalidInputError);
    expect(t.twin.cloud.placements()).toHaveLength(placed);
  });
});
