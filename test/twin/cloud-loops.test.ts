import { afterEach, describe, expect, it } from 'vitest';
import { LB_FINALIZER, loadBalancerIngress } from '../../lib/twin/cloud/services.ts';
import type { Fault, Provider } from '../../lib/twin/spec.ts';
import type { KubeObject, ObjectStore } from '../../lib/twin/store.ts';
import {
  type CloudHarness,
  kubeadmKcmCommand,
  lease,
  setPodReady,
  startHarness,
  until,
  writeCcm,
  writeKcm,
  writeNode,
} from './cloud-harness.ts';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
let h: CloudHarness | undefined;

async function harness(): Promise<CloudHarness> {
  h = await startHarness((spec) => ({ ...spec, latencies: { ...spec.latencies, leaseDuration: 300 } }));
  return h;
}

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function node(store: ObjectStore, name: string): KubeObject | undefined {
  return store.tryGet('nodes', undefined, name);
}

function providerID(n: KubeObject | undefined): string | undefined {
  return (n?.spec as { providerID?: string } | undefined)?.providerID;
}

function tainted(n: KubeObject | undefined): boolean {
  return ((n?.spec as { taints?: { key: string }[] } | undefined)?.taints ?? []).some(
    (t) => t.key === UNINITIALIZED,
  );
}

function events(store: ObjectStore, reason: string, name: string): KubeObject[] {
  return store
    .list('events')
    .items.filter((e) => e.reason === reason && (e.involvedObject as { name: string }).name === name);
}

function loadBalancerService(store: ObjectStore, name: string): KubeObject {
  return store.create('services', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { type: 'LoadBalancer', selector: { app: name }, ports: [{ port: 80, protocol: 'TCP' }] },
  });
}

function ingress(store: ObjectStore, name: string): { hostname?: string; ip?: string }[] | undefined {
  const svc = store.tryGet('services', 'default', name);
  return (svc?.status as { loadBalancer?: { ingress?: { hostname?: string }[] } } | undefined)?.loadBalancer
    ?.ingress;
}

describe('cloud-node controller (node initialisation)', () => {
  it('initialises a tainted node once a CCM leads: providerID, addresses, labels, taint gone', async () => {
    const t = await harness();
    writeNode(t.store, 'worker-1', { uninitialized: true });
    writeCcm(t.store, 'aws-cloud-controller-manager', 'cp-1');
    const done = await until(() => {
      const n = node(t.store, 'worker-1');
      return !tainted(n) && n;
    }, 'worker-1 initialised');
    const instance = t.cloud.instanceFor('worker-1');
    expect(instance).toBeDefined();
    expect(providerID(done)).toBe(instance?.providerID);
    expect(providerID(done)).toMatch(/^aws:\/\/\/us-east-1[a-c]\/i-[0-9a-f]{17}$/);
    expect(done.metadata.labels).toMatchObject({
      'kubernetes.io/hostname': 'worker-1',
      'topology.kubernetes.io/region': 'us-east-1',
      'topology.kubernetes.io/zone': instance?.zone,
      'failure-domain.beta.kubernetes.io/region': 'us-east-1',
      'failure-domain.beta.kubernetes.io/zone': instance?.zone,
      'node.kubernetes.io/instance-type': 'm5.large',
      'beta.kubernetes.io/instance-type': 'm5.large',
    });
    expect((done.status as { addresses?: unknown }).addresses).toEqual(instance?.addresses);
    // The kubelet's status survives the controller's writes.
    expect((done.status as { conditions?: unknown[] }).conditions).toHaveLength(1);
    expect(events(t.store, 'Synced', 'worker-1')).toHaveLength(1);
  });

  it('never initialises nodes from an in-tree KCM, though it runs the other cloud loops', async () => {
    const t = await harness();
    writeNode(t.store, 'worker-1', { uninitialized: true });
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    loadBalancerService(t.store, 'web');
    await until(() => ingress(t.store, 'web'), 'the KCM to run the service loop');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(tainted(node(t.store, 'worker-1'))).toBe(true);
    expect(providerID(node(t.store, 'worker-1'))).toBeUndefined();
  });

  it('leaves a node the cloud cannot find tainted, and initialises it once the instance exists', async () => {
    const t = await harness();
    writeNode(t.store, 'late-1', { uninitialized: true });
    writeNode(t.store, 'worker-2', { uninitialized: true });
    writeCcm(t.store, 'ccm', 'cp-1');
    await until(() => !tainted(node(t.store, 'worker-2')), 'worker-2 initialised');
    expect(tainted(node(t.store, 'late-1'))).toBe(true);
    t.cloud.addNode('late-1', 'worker');
    await until(() => !tainted(node(t.store, 'late-1')), 'late-1 initialised on a retry');
    expect(providerID(node(t.store, 'late-1'))).toBe(t.cloud.instanceFor('late-1')?.providerID);
  });

  it('initialises many nodes with the CCM’s --concurrent-node-syncs workers', async () => {
    const t = await harness();
    const names = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
    for (const name of names) {
      t.cloud.addNode(name, 'worker');
      writeNode(t.store, name, { uninitialized: true });
    }
    writeCcm(t.store, 'ccm', 'cp-1', ['--concurrent-node-syncs=8']);
    await until(() => names.every((n) => !tainted(node(t.store, n))), 'all 40 nodes initialised');
  });
});

describe('cloud-node-lifecycle controller', () => {
  it('deletes a NotReady node the cloud does not know, and keeps Ready ones and known ones', async () => {
    const t = await harness();
    writeNode(t.store, 'ghost', { ready: false });
    writeNode(t.store, 'ready-ghost', { ready: true });
    writeNode(t.store, 'worker-1', { ready: false });
    writeNode(t.store, 'wrong-region', { ready: false, providerID: 'aws:///us-west-2a/i-0123456789abcdef0' });
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    await until(
      () => !node(t.store, 'ghost') && !node(t.store, 'wrong-region'),
      'the unknown NotReady nodes deleted',
    );
    expect(events(t.store, 'DeletingNode', 'ghost')[0]?.message).toBe(
      'Deleting node ghost because it does not exist in the cloud provider',
    );
    expect(node(t.store, 'ready-ghost')).toBeDefined();
    expect(node(t.store, 'worker-1')).toBeDefined();
  });

  it('gives an uninitialized node without providerID time to be initialised', async () => {
    const t = await harness();
    writeNode(t.store, 'new-ghost', { ready: false, uninitialized: true });
    writeNode(t.store, 'old-ghost', { ready: false });
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    await until(() => !node(t.store, 'old-ghost'), 'the old ghost deleted');
    expect(node(t.store, 'new-ghost')).toBeDefined();
  });

  it('deletes nothing while no controller runs the cloud loops', async () => {
    const t = await harness();
    writeNode(t.store, 'ghost', { ready: false });
    writeKcm(
      t.store,
      'cp-1',
      await kubeadmKcmCommand((argv) => argv.filter((a) => !a.startsWith('--cloud'))),
    );
    await until(() => lease(t.store, 'kube-controller-manager'), 'the KCM to lead');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(node(t.store, 'ghost')).toBeDefined();
  });
});

describe('cloudLookupFails', () => {
  const withoutCloud = (argv: string[]): string[] => argv.filter((a) => !a.startsWith('--cloud'));
  const faulty = async (fault: Omit<Extract<Fault, { kind: 'cloudLookupFails' }>, 'kind' | 'after'>) => {
    h = await startHarness((spec) => ({
      ...spec,
      faults: [{ kind: 'cloudLookupFails', after: 0, ...fault }],
      latencies: { ...spec.latencies, leaseDuration: 300 },
    }));
    return h;
  };

  it('makes a CCM delete a NotReady node its lookup does not find, where the in-tree KCM, whose lookups work, kept it', async () => {
    const t = await faulty({ node: 'worker-2', by: 'external', error: 'notFound' });
    writeNode(t.store, 'worker-1', { ready: false });
    writeNode(t.store, 'worker-2', { ready: false });
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    await until(() => t.controllers.active()[0]?.kind === 'kube-controller-manager', 'the KCM to lead');
    // Several lifecycle periods (the retry period is 40 ms here) with the in-tree lookups.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(node(t.store, 'worker-2')).toBeDefined();

    t.store.delete('pods', 'kube-system', 'kube-controller-manager-cp-1');
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand(withoutCloud));
    writeCcm(t.store, 'ccm', 'cp-1');
    await until(() => !node(t.store, 'worker-2'), 'the CCM to delete worker-2');
    expect(events(t.store, 'DeletingNode', 'worker-2')).toHaveLength(1);
    expect(node(t.store, 'worker-1')).toBeDefined();
  });

  it('makes an in-tree KCM delete the node when it fails for in-tree lookups', async () => {
    const t = await faulty({ node: 'worker-2', by: 'in-tree', error: 'notFound' });
    writeNode(t.store, 'worker-2', { ready: false });
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    await until(() => !node(t.store, 'worker-2'), 'the KCM to delete worker-2');
  });

  it('deletes nothing while the CCM runs without its cloud-node-lifecycle controller, and initialises the others', async () => {
    const t = await faulty({ node: 'worker-2', by: 'external', error: 'notFound' });
    // An initialised node whose kubelet restarts: NotReady, with the providerID its lookup uses.
    const known = t.cloud.instanceFor('worker-2')?.providerID as string;
    writeNode(t.store, 'worker-2', { ready: false, providerID: known });
    writeNode(t.store, 'worker-1', { uninitialized: true });
    writeCcm(t.store, 'ccm', 'cp-1', ['--controllers=*,-cloud-node-lifecycle']);
    await until(() => !tainted(node(t.store, 'worker-1')), 'worker-1 initialised');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(node(t.store, 'worker-2')).toBeDefined();
    expect(events(t.store, 'DeletingNode', 'worker-2')).toEqual([]);
  });

  it('on unauthorized neither deletes nor initialises the node while it lasts, and initialises it after', async () => {
    const t = await faulty({ node: 'worker-2', by: 'both', error: 'unauthorized', duration: 400 });
    writeNode(t.store, 'worker-2', { ready: false, uninitialized: true });
    writeCcm(t.store, 'ccm', 'cp-1');
    await until(() => t.controllers.active().length === 1, 'the CCM to lead');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(tainted(node(t.store, 'worker-2'))).toBe(true);
    await until(() => !tainted(node(t.store, 'worker-2')), 'worker-2 initialised once the window closed');
    expect(Date.now() - t.ctx.startedAt).toBeGreaterThanOrEqual(400);
    expect(events(t.store, 'DeletingNode', 'worker-2')).toEqual([]);
  });
});

describe('service controller (load balancers)', () => {
  it('gives a LoadBalancer Service an ELB hostname and the cleanup finalizer, with events', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    const created = loadBalancerService(t.store, 'web');
    const [lb] = await until(() => ingress(t.store, 'web'), 'the ingress');
    const name = `a${created.metadata.uid?.replaceAll('-', '')}`.slice(0, 32);
    expect(lb?.hostname).toMatch(new RegExp(`^${name}-\\d+\\.us-east-1\\.elb\\.amazonaws\\.com$`));
    expect(t.store.get('services', 'default', 'web').metadata.finalizers).toEqual([LB_FINALIZER]);
    expect(events(t.store, 'EnsuringLoadBalancer', 'web')).toHaveLength(1);
    expect(events(t.store, 'EnsuredLoadBalancer', 'web')).toHaveLength(1);
  });

  it('keeps the ingress across the move from the in-tree KCM to a CCM', async () => {
    const t = await harness();
    writeKcm(t.store, 'cp-1', await kubeadmKcmCommand());
    loadBalancerService(t.store, 'web');
    const before = await until(() => ingress(t.store, 'web'), 'the KCM’s ingress');
    // The KCM restarts without its cloud provider; a CCM starts and resyncs every Service.
    t.store.delete('pods', 'kube-system', 'kube-controller-manager-cp-1');
    writeKcm(
      t.store,
      'cp-1',
      await kubeadmKcmCommand((argv) => argv.filter((a) => !a.startsWith('--cloud'))),
    );
    writeCcm(t.store, 'ccm', 'cp-1');
    await until(() => t.controllers.active()[0]?.kind === 'cloud-controller-manager', 'the CCM to lead');
    loadBalancerService(t.store, 'api');
    await until(() => ingress(t.store, 'api'), 'the CCM to run the service loop');
    expect(ingress(t.store, 'web')).toEqual(before);
    expect(events(t.store, 'EnsuredLoadBalancer', 'web')).toHaveLength(1);
  });

  it('cleans up when a Service stops being a LoadBalancer, and lets a deleted one go', async () => {
    const t = await harness();
    writeCcm(t.store, 'ccm', 'cp-1');
    loadBalancerService(t.store, 'web');
    loadBalancerService(t.store, 'gone');
    await until(() => ingress(t.store, 'web') && ingress(t.store, 'gone'), 'both ingresses');
    const web = structuredClone(t.store.get('services', 'default', 'web'));
    (web.spec as { type: string }).type = 'ClusterIP';
    t.store.update('services', web);
    t.store.delete('services', 'default', 'gone');
    await until(() => !t.store.tryGet('services', 'default', 'gone'), 'the deleted Service to go');
    const after = await until(() => {
      const svc = t.store.get('services', 'default', 'web');
      return !svc.metadata.finalizers && svc;
    }, 'the finalizer dropped');
    expect(after.status).toEqual({ loadBalancer: {} });
    expect(events(t.store, 'DeletedLoadBalancer', 'gone')).toHaveLength(1);
  });

  it('leaves Services with a loadBalancerClass to their own controller', async () => {
    const t = await harness();
    writeCcm(t.store, 'ccm', 'cp-1');
    const svc = loadBalancerService(t.store, 'other');
    const next = structuredClone(svc);
    (next.spec as { loadBalancerClass?: string }).loadBalancerClass = 'service.k8s.aws/nlb';
    t.store.update('services', next);
    loadBalancerService(t.store, 'mine');
    await until(() => ingress(t.store, 'mine'), 'the class-less Service served');
    expect(ingress(t.store, 'other')).toBeUndefined();
  });

  it('blocks the deletion of a load-balanced Service while no cloud controller runs', async () => {
    const t = await harness();
    writeCcm(t.store, 'ccm', 'cp-1');
    loadBalancerService(t.store, 'web');
    await until(() => ingress(t.store, 'web'), 'the ingress');
    setPodReady(t.store, 'kube-system', 'ccm', false);
    t.store.delete('services', 'default', 'web');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(t.store.get('services', 'default', 'web').metadata.deletionTimestamp).toBeDefined();
  });
});

describe('load balancer addresses', () => {
  const service = (uid: string, annotations?: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'default', uid, ...(annotations ? { annotations } : {}) },
  });
  const uid = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';

  it('are shaped like each provider’s and depend only on the Service', () => {
    const shapes: Record<Provider, RegExp> = {
      aws: /^a6f1c2a9e3b4d4e5f8a7b9c0d1e2f3a4-\d+\.eu-west-1\.elb\.amazonaws\.com$/,
      ibm: /^[0-9a-f]{8}-eu-west-1\.lb\.appdomain\.cloud$/,
      azure: /^20\.\d+\.\d+\.\d+$/,
      gce: /^34\.\d+\.\d+\.\d+$/,
      openstack: /^172\.24\.4\.\d+$/,
      vsphere: /^192\.168\.200\.\d+$/,
    };
    for (const [provider, shape] of Object.entries(shapes) as [Provider, RegExp][]) {
      const lb = loadBalancerIngress(provider, 'eu-west-1', service(uid));
      expect(lb.hostname ?? lb.ip).toMatch(shape);
      expect(loadBalancerIngress(provider, 'eu-west-1', service(uid))).toEqual(lb);
      expect(loadBalancerIngress(provider, 'eu-west-1', service(uid.replace('6f', '7f')))).not.toEqual(lb);
    }
    const nlb = loadBalancerIngress(
      'aws',
      'us-east-1',
      service(uid, { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' }),
    );
    expect(nlb.hostname).toMatch(
      /^a6f1c2a9e3b4d4e5f8a7b9c0d1e2f3a4-[0-9a-f]{16}\.elb\.us-east-1\.amazonaws\.com$/,
    );
  });
});
