/**
 * Storage readiness end to end, through the CLI as a user runs it: an AWS twin whose in-tree EBS volume
 * has its CSIDriver but whose kubelets never registered ebs.csi.aws.com (no node plugin: no `csiDrivers`
 * in the spec). The upgrade is refused before any change, naming the driver, the volume and the nodes;
 * plan shows the inventory; --allow-missing-csi goes on, the run records it and the volume stays bound;
 * drift then reports the nodes without the driver and the in-tree StorageClass a new claim names. The migration with
 * the driver registered is the HA upgrade of upgrade.test.ts (aws-ha-mini) and GCE's in providers.test.ts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import type { DriftReport } from '../../lib/drift/findings.ts';
import { LocalRunStore } from '../../lib/store/local-store.ts';
import { inProcessCli } from '../cli/in-process-cli.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, fixtureSpec, startTestTwin, type TestTwin } from '../twin/running-twin.ts';
import { nodeFiles, startE2E } from './harness.ts';

const GCP_MINI = fileURLToPath(new URL('../fixtures/twins/gcp-mini.yaml', import.meta.url));

const cli = inProcessCli('storage');
/** What the test started, stopped after it. */
let running: Pick<TestTwin, 'stop'> | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** aws-mini with aws-ha-mini's EBS objects (CSIDriver, classes, a bound volume attached to worker-1). */
async function unregisteredSpec() {
  const [mini, ha] = await Promise.all([fixtureSpec(FIXTURES.awsMini), fixtureSpec(FIXTURES.awsHaMini)]);
  const storage = ha.objects.filter((o) => o.metadata.name !== 'kubeadm-config');
  expect(storage.map((o) => o.kind)).toContain('PersistentVolume');
  expect(mini.nodeGroups.flatMap((g) => g.csiDrivers)).toEqual([]);
  return fixtureSpec(FIXTURES.awsMini, { overrides: { objects: [...mini.objects, ...storage] } });
}

/** gcp-mini (a GCE PD volume and its classes) with no node plugin on any node. */
async function gceUnregisteredSpec() {
  const spec = await fixtureSpec(GCP_MINI);
  const nodeGroups = spec.nodeGroups.map((g) => ({ ...g, csiDrivers: [] }));
  return fixtureSpec(GCP_MINI, { overrides: { nodeGroups } });
}

const REFUSALS = [
  {
    what: 'the EBS volume’s',
    spec: unregisteredSpec,
    ccm: 'aws-cloud-controller-manager',
    missing:
      /ebs\.csi\.aws\.com \(not registered in the CSINode of worker-1, worker-2\), which serves in-tree volumes pv-data-0 and StorageClasses gp2/,
  },
  {
    what: 'the GCE PD volume’s',
    spec: gceUnregisteredSpec,
    ccm: 'cloud-controller-manager',
    missing:
      /pd\.csi\.storage\.gke\.io \(not registered in the CSINode of worker-1, worker-2\), which serves in-tree volumes pv-data-0 and StorageClasses standard/,
  },
];

describe.each(apiServersUnderTest())('on the $name', (server) => {
  // GCE's on the in-process server only: the real one adds nothing a second provider would tell.
  it.each(server.realApi ? REFUSALS.slice(0, 1) : REFUSALS)(
    'refuses an upgrade before any change when $what driver is registered on no node',
    async (c) => {
      const t = await startTestTwin(await c.spec(), { realApi: server.realApi });
      running = t;
      const before = await nodeFiles(t);

      expect(await cli.run(t, 'upgrade')).toBe(EXIT.preflightFailed);

      expect(cli.out).toMatch(c.missing);
      expect(cli.out).toMatch(/--allow-missing-csi/);
      expect(cli.out).not.toMatch(/\n\s+at /);
      expect(await nodeFiles(t)).toEqual(before);
      await expect(
        t.apps.readNamespacedDeployment({ name: c.ccm, namespace: 'kube-system' }),
      ).rejects.toThrow();
    },
  );
});

describe('verify', () => {
  it('rolls the upgrade back when a volume bound at preflight is detached during the move', async () => {
    // The same cluster with the driver registered on every node: preflight lets it through.
    const base = await unregisteredSpec();
    const nodeGroups = base.nodeGroups.map((g) => ({ ...g, csiDrivers: ['ebs.csi.aws.com'] }));
    const e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini, { overrides: { ...base, nodeGroups } }));
    running = e2e;
    let detached: Promise<unknown> | undefined;
    const result = await e2e.upgrade({
      onProgress: (p) => {
        // The attach/detach controller lets the volume go while kubelets move (a driver gone, say).
        if (p.step !== 'flip-kubelet' || detached) return;
        detached = e2e.t.storage
          .listVolumeAttachment()
          .then((l) => e2e.t.storage.deleteVolumeAttachment({ name: l.items[0]?.metadata?.name ?? '' }));
      },
    });
    await detached;
    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(result.error?.cause).toContain('volume pv-data-0 is no longer attached to worker-1');
  });
});

/** A new claim on the in-tree class, waiting for its volume: what drift's in-tree class warning is about. */
const NEW_CLAIM = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data-1', namespace: 'default' },
  spec: {
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '1Gi' } },
    storageClassName: 'gp2',
  },
};

describe('--allow-missing-csi', () => {
  it('goes on knowingly: recorded in the run, the volume still bound, drift naming what is missing', async () => {
    const spec = await unregisteredSpec();
    const t = await startTestTwin({ ...spec, objects: [...spec.objects, NEW_CLAIM] });
    running = t;
    expect(await cli.run(t, 'plan')).toBe(EXIT.ok);
    expect(cli.out).toContain(
      'volume pv-data-0 (kubernetes.io/aws-ebs, Bound to default/data-0, attached to worker-1): served by ebs.csi.aws.com (MISSING) before and after the move',
    );
    expect(cli.out).toContain(
      'StorageClass gp2 (kubernetes.io/aws-ebs): new volumes provisioned by ebs.csi.aws.com',
    );
    cli.clear();

    expect(await cli.run(t, 'upgrade', '--allow-missing-csi')).toBe(EXIT.ok);
    expect(cli.out).toMatch(
      /going on without CSI driver\(s\), as --allow-missing-csi says: ebs\.csi\.aws\.com/,
    );
    const [record] = await new LocalRunStore(path.join(cli.dir, 'state')).list('c1');
    expect(record?.snapshot).toMatchObject({
      missingCsiAllowed: true,
      storage: { volumes: [{ name: 'pv-data-0', phase: 'Bound', attachedTo: ['worker-1'] }] },
    });
    const pv = await t.core.readPersistentVolume({ name: 'pv-data-0' });
    expect(pv.status?.phase).toBe('Bound');
    cli.clear();

    const args = ['--cluster-id', 'c1', '--kubeconfig', t.twin.kubeconfigPath, '--json'];
    expect(await main(['drift', ...args, '--state-dir', path.join(cli.dir, 'state')])).toBe(EXIT.drifted);
    // stdout's report, then stderr's line saying how many findings.
    const report = JSON.parse(cli.out.slice(0, cli.out.lastIndexOf('}') + 1)) as DriftReport;
    expect(report.storage?.drivers).toEqual([
      {
        driver: 'ebs.csi.aws.com',
        installed: true,
        unregisteredOn: ['worker-1', 'worker-2'],
        notMigratedOn: [],
      },
    ]);
    expect(report.findings.filter((f) => f.kind === 'csi-driver-missing').map((f) => f.object)).toEqual([
      'CSINode worker-1',
      'CSINode worker-2',
    ]);
    expect(report.findings.find((f) => f.kind === 'in-tree-storage-class')).toMatchObject({
      object: 'StorageClass gp2',
      expected: 'new claims on a CSI StorageClass: ebs-csi',
      seen: 'provisioner kubernetes.io/aws-ebs, named by claims waiting for a volume',
      severity: 'warning',
    });
  });
});
