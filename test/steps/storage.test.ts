/** The storage inventory preflight, verify, plan and drift read: which driver serves what, and where it must be. */
import type { V1CSINode, V1Node, V1PersistentVolume, V1VolumeAttachment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PROVIDERS, providerFacts } from '../../lib/providers/catalog.ts';
import { IN_TREE_VOLUME_PLUGINS } from '../../lib/providers/csi-migration.ts';
import {
  lostVolumes,
  missingCsiDrivers,
  type StorageObjects,
  storageInventory,
} from '../../lib/steps/storage.ts';

const node = (name: string, spec: V1Node['spec'] = {}): V1Node => ({ metadata: { name }, spec });
/** What the kubelet of 1.25–1.30 writes with every CSIMigration<X> on (pkg/volume/csi/csi_plugin.go). */
const MIGRATED = {
  'storage.alpha.kubernetes.io/migrated-plugins':
    'kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/vsphere-volume',
};
const csiNode = (name: string, drivers: string[] | null, annotations = MIGRATED): V1CSINode => ({
  metadata: { name, annotations },
  spec: { drivers: drivers?.map((d) => ({ name: d, nodeID: name })) as never },
});
const ebs = (name: string, claim?: string): V1PersistentVolume => ({
  metadata: { name },
  spec: {
    awsElasticBlockStore: { volumeID: `aws://us-east-1a/${name}` },
    ...(claim ? { claimRef: { namespace: 'default', name: claim } } : {}),
  },
  status: { phase: claim ? 'Bound' : 'Available' },
});
const attached = (pv: string, nodeName: string, ok = true): V1VolumeAttachment => ({
  metadata: { name: `csi-${pv}-${nodeName}` },
  spec: { attacher: 'ebs.csi.aws.com', nodeName, source: { persistentVolumeName: pv } },
  status: { attached: ok },
});

function objects(extra: Partial<StorageObjects> = {}): StorageObjects {
  return {
    nodes: [
      node('cp-1', { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] }),
      node('worker-1'),
      node('worker-2', {
        taints: [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' }],
      }),
      node('worker-3', { unschedulable: true }),
    ],
    volumes: [ebs('vol-a', 'data-a'), { metadata: { name: 'local' }, spec: { hostPath: { path: '/x' } } }],
    classes: [
      { metadata: { name: 'gp2' }, provisioner: 'kubernetes.io/aws-ebs' },
      { metadata: { name: 'ebs-csi' }, provisioner: 'ebs.csi.aws.com' },
    ],
    csiDrivers: ['ebs.csi.aws.com'],
    csiNodes: ['cp-1', 'worker-1', 'worker-2', 'worker-3'].map((n) => csiNode(n, ['ebs.csi.aws.com'])),
    attachments: [attached('vol-a', 'cp-1'), attached('vol-a', 'worker-3', false)],
    ...extra,
  };
}

describe('the in-tree plugins and their CSI drivers', () => {
  it('name, for each in-tree provider, a driver its catalog entry lists', () => {
    const drivers = PROVIDERS.flatMap((p) => providerFacts(p).csiDrivers);
    expect(IN_TREE_VOLUME_PLUGINS.filter((p) => !drivers.includes(p.driver))).toEqual([]);
  });
});

describe('storageInventory', () => {
  it('lists in-tree volumes with their claim and attachments, and nothing else', () => {
    const inv = storageInventory(objects());
    expect(inv.volumes).toEqual([
      {
        name: 'vol-a',
        plugin: 'kubernetes.io/aws-ebs',
        driver: 'ebs.csi.aws.com',
        claim: 'default/data-a',
        phase: 'Bound',
        attachedTo: ['cp-1'],
      },
    ]);
    expect(inv.inTreeClasses).toEqual([
      { name: 'gp2', plugin: 'kubernetes.io/aws-ebs', driver: 'ebs.csi.aws.com', isDefault: false },
    ]);
    expect(inv.csiClasses).toEqual([{ name: 'ebs-csi', driver: 'ebs.csi.aws.com' }]);
    expect(missingCsiDrivers(inv)).toEqual([]);
  });

  it('needs the driver where a volume is attached and where new pods go, not on cordoned or tainted nodes', () => {
    const inv = storageInventory(objects({ csiNodes: [csiNode('cp-1', null), csiNode('worker-3', [])] }));
    // cp-1 mounts vol-a; worker-1 and worker-2 (only waiting for the CCM) take new pods; worker-3 is cordoned.
    expect(inv.drivers).toEqual([
      {
        driver: 'ebs.csi.aws.com',
        installed: true,
        unregisteredOn: ['cp-1', 'worker-1', 'worker-2'],
        notMigratedOn: [],
      },
    ]);
  });

  it('says what is missing, naming the driver, the nodes, the volumes and the classes', () => {
    const inv = storageInventory(objects({ csiDrivers: [], csiNodes: [] }));
    expect(missingCsiDrivers(inv)).toEqual([
      'ebs.csi.aws.com (no CSIDriver object; not registered in the CSINode of cp-1, worker-1, worker-2), which serves in-tree volumes vol-a and StorageClasses gp2',
    ]);
  });

  it('names a node whose kubelet keeps the plugin in-tree (CSI migration turned off)', () => {
    const offOnWorker1 = objects().csiNodes.map((n) =>
      n.metadata?.name === 'worker-1' ? csiNode('worker-1', ['ebs.csi.aws.com'], {} as never) : n,
    );
    const inv = storageInventory(objects({ csiNodes: offOnWorker1 }));
    expect(inv.drivers[0]?.notMigratedOn).toEqual(['worker-1']);
    expect(missingCsiDrivers(inv)).toEqual([
      "ebs.csi.aws.com (CSI migration off in the kubelet of worker-1, as its CSINode's storage.alpha.kubernetes.io/migrated-plugins says), which serves in-tree volumes vol-a and StorageClasses gp2",
    ]);
  });

  it('needs no driver where nothing is in-tree', () => {
    const inv = storageInventory(objects({ volumes: [], classes: [], csiNodes: [] }));
    expect(inv.drivers).toEqual([]);
    expect(missingCsiDrivers(inv)).toEqual([]);
  });
});

describe('lostVolumes', () => {
  const before = storageInventory(objects());

  it('finds nothing when every bound volume is bound and attached as before', () => {
    expect(lostVolumes(before, storageInventory(objects()))).toEqual([]);
  });

  it('names a volume released, gone, or detached from its node', () => {
    const released = { ...ebs('vol-a'), status: { phase: 'Released' } };
    expect(lostVolumes(before, storageInventory(objects({ volumes: [released] })))).toEqual([
      'volume vol-a is Released, was Bound to default/data-a',
    ]);
    expect(lostVolumes(before, storageInventory(objects({ volumes: [] })))).toEqual(['volume vol-a is gone']);
    expect(lostVolumes(before, storageInventory(objects({ attachments: [] })))).toEqual([
      'volume vol-a is no longer attached to cp-1',
    ]);
  });
});
