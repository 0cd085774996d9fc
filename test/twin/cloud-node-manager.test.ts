/**
 * Azure's split of node initialisation, as the twin models it: the CCM runs `--controllers=*,-cloud-node`
 * (so it leads and runs the other cloud loops without touching tainted nodes) and the cloud-node-manager
 * DaemonSet pod on each node initialises that node, CCM or not.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { controllerCandidate, controllerEnabled } from '../../lib/twin/cloud/candidates.ts';
import { startInvariantMonitor } from '../../lib/twin/invariants.ts';
import type { KubeObject, ObjectStore } from '../../lib/twin/store.ts';
import {
  type CloudHarness,
  lease,
  setPodReady,
  startHarness,
  until,
  writeNode,
  writePod,
} from './cloud-harness.ts';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
let h: CloudHarness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The aws-mini fixture's nodes on an Azure cloud. */
async function azure(): Promise<CloudHarness> {
  h = await startHarness((spec) => ({
    ...spec,
    cloud: { ...spec.cloud, provider: 'azure' },
    latencies: { ...spec.latencies, leaseDuration: 300 },
  }));
  return h;
}

/** The Azure CCM's container as assets/providers/azure/cloud-controller-manager.yaml runs it. */
function writeAzureCcm(store: ObjectStore, controllers = '*,-cloud-node'): KubeObject {
  return writePod(store, {
    name: 'cloud-controller-manager-1',
    node: 'cp-1',
    container: 'cloud-controller-manager',
    argv: ['cloud-controller-manager', '--cloud-provider=azure', `--controllers=${controllers}`],
  });
}

function writeNodeManager(store: ObjectStore, node: string, ready = true): KubeObject {
  return writePod(store, {
    name: `cloud-node-manager-${node}`,
    node,
    container: 'cloud-node-manager',
    argv: ['cloud-node-manager', '--node-name=$(NODE_NAME)', '--wait-routes=false'],
    ready,
  });
}

const node = (store: ObjectStore, name: string) => store.tryGet('nodes', undefined, name);
const tainted = (n: KubeObject | undefined) =>
  ((n?.spec as { taints?: { key: string }[] } | undefined)?.taints ?? []).some(
    (t) => t.key === UNINITIALIZED,
  );
const syncedBy = (store: ObjectStore, component: string) =>
  store
    .list('events')
    .items.filter(
      (e) => e.reason === 'Synced' && (e.source as { component?: string }).component === component,
    )
    .map((e) => (e.involvedObject as { name: string }).name);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('--controllers, read as k8s.io/controller-manager does', () => {
  it('enables cloud-node by default and under *, and not when it is listed -cloud-node or left out', () => {
    expect(controllerEnabled(undefined, 'cloud-node')).toBe(true);
    expect(controllerEnabled('*', 'cloud-node')).toBe(true);
    expect(controllerEnabled('*,-cloud-node', 'cloud-node')).toBe(false);
    expect(controllerEnabled('-cloud-node,*', 'cloud-node')).toBe(false);
    expect(controllerEnabled('cloud-node,-cloud-node', 'cloud-node')).toBe(true);
    expect(controllerEnabled('service,route', 'cloud-node')).toBe(false);
    expect(controllerEnabled('*,-cloud-node', 'service')).toBe(true);
  });

  it('marks a CCM without cloud-node as running cloud loops but not initialising nodes', () => {
    const pod = (argv: string[]): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'ccm', namespace: 'kube-system', uid: 'u' },
      spec: { nodeName: 'cp-1', containers: [{ name: 'cloud-controller-manager', args: argv }] },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(
      controllerCandidate(pod(['--cloud-provider=azure', '--controllers=*,-cloud-node']), 'azure'),
    ).toMatchObject({ cloudLoops: true, initialisesNodes: false });
    expect(controllerCandidate(pod(['--cloud-provider=azure']), 'azure')?.initialisesNodes).toBe(true);
  });
});

describe('Azure node initialisation by cloud-node-manager', () => {
  it('a leading CCM with --controllers=*,-cloud-node leaves a tainted node alone', async () => {
    const t = await azure();
    writeNode(t.store, 'worker-1', { uninitialized: true });
    writeAzureCcm(t.store);
    await until(() => lease(t.store, 'cloud-controller-manager')?.holderIdentity, 'the CCM to lead');
    expect(t.controllers.active()).toHaveLength(1);
    expect(t.controllers.initialises('worker-1')).toBe(false);
    await pause(60);
    expect(tainted(node(t.store, 'worker-1'))).toBe(true);
    expect(syncedBy(t.store, 'cloud-node-controller')).toEqual([]);
  });

  it('the Ready cloud-node-manager on a node initialises that node only, with or without a CCM', async () => {
    const t = await azure();
    writeNode(t.store, 'worker-1', { uninitialized: true });
    writeNode(t.store, 'worker-2', { uninitialized: true });
    writeNodeManager(t.store, 'worker-1');
    const done = await until(() => {
      const n = node(t.store, 'worker-1');
      return !tainted(n) && n;
    }, 'worker-1 initialised by its node manager');
    const instance = t.cloud.instanceFor('worker-1');
    expect((done.spec as { providerID?: string }).providerID).toBe(instance?.providerID);
    expect(instance?.providerID).toMatch(
      /^azure:\/\/\/subscriptions\/[0-9a-f-]{36}\/resourceGroups\/[^/]+\/providers\/Microsoft\.Compute\/virtualMachines\/worker-1$/,
    );
    expect(done.metadata.labels).toMatchObject({
      'topology.kubernetes.io/region': instance?.region,
      'topology.kubernetes.io/zone': instance?.zone,
      'node.kubernetes.io/instance-type': 'Standard_D2s_v3',
    });
    expect((done.status as { addresses?: unknown }).addresses).toEqual(instance?.addresses);
    expect(syncedBy(t.store, 'cloud-node-manager')).toEqual(['worker-1']);
    await pause(60);
    expect(tainted(node(t.store, 'worker-2'))).toBe(true);
    expect(t.controllers.initialises('worker-2')).toBe(false);
  });

  it('waits for the cloud-node-manager pod to be Ready, and stops with it', async () => {
    const t = await azure();
    writeAzureCcm(t.store);
    writeNode(t.store, 'worker-1', { uninitialized: true });
    writeNodeManager(t.store, 'worker-1', false);
    await pause(60);
    expect(tainted(node(t.store, 'worker-1'))).toBe(true);
    expect(t.controllers.initialises('worker-1')).toBe(false);
    setPodReady(t.store, 'kube-system', 'cloud-node-manager-worker-1', true);
    expect(t.controllers.initialises('worker-1')).toBe(true);
    await until(() => !tainted(node(t.store, 'worker-1')), 'worker-1 initialised once its manager is Ready');
    expect(syncedBy(t.store, 'cloud-node-controller')).toEqual([]);

    // A node manager that went away initialises nothing more.
    t.store.delete('pods', 'kube-system', 'cloud-node-manager-worker-1');
    await until(() => !t.controllers.initialises('worker-1'), 'the manager gone');
  });

  it('a CCM that keeps cloud-node still initialises every node itself', async () => {
    const t = await azure();
    writeNode(t.store, 'worker-2', { uninitialized: true });
    writeAzureCcm(t.store, '*');
    await until(() => !tainted(node(t.store, 'worker-2')), 'worker-2 initialised by the CCM');
    expect(t.controllers.initialises('worker-2')).toBe(true);
    expect(syncedBy(t.store, 'cloud-node-controller')).toEqual(['worker-2']);
  });
});

describe('the invariant monitor on Azure', () => {
  it('records a tainted node that only a CCM without cloud-node runs beside, until its node manager comes', async () => {
    const t = await azure();
    const monitor = startInvariantMonitor({
      ctx: t.ctx,
      controllers: t.controllers,
      apiAvailable: () => true,
      sampleMs: 5,
    });
    try {
      writeAzureCcm(t.store);
      await until(() => lease(t.store, 'cloud-controller-manager')?.holderIdentity, 'the CCM to lead');
      writeNode(t.store, 'worker-1', { uninitialized: true });
      await pause(40);
      writeNodeManager(t.store, 'worker-1');
      await until(() => !tainted(node(t.store, 'worker-1')), 'worker-1 initialised by its node manager');
      const [violation] = await until(
        () => monitor.violations().length > 0 && monitor.violations(),
        'the interval to close',
      );
      expect(violation).toMatchObject({
        kind: 'uninitialized-without-cloud-controller',
        detail: { nodes: ['worker-1'] },
      });
      expect(violation?.durationMs).toBeGreaterThanOrEqual(30);
    } finally {
      await monitor.stop();
    }
  });
});
