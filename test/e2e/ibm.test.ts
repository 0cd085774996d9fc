/**
 * IBM Cloud never had an in-tree provider: on its twin, external from birth (kubelets and
 * kube-controller-manager --cloud-provider=external, every node waiting uninitialised without a
 * providerID), `upgrade --provider ibm` installs the IBM CCM, verifies it, changes nothing the second time,
 * and a drift check then finds the cluster clean. The real synthesized ASL, run by the local engine, against
 * the twin over HTTP.
 */
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { V1Node } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { checkDrift } from '../../lib/drift/check.ts';
import { expectationFromRuns } from '../../lib/drift/expectation.ts';
import { localContext } from '../../lib/local/context.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import type { Progress } from '../../lib/steps/context.ts';
import type { PreflightResult } from '../../lib/steps/schemas.ts';
import { hostPath } from '../../lib/twin/context.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { type FileEdit, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const IBM_MINI = fileURLToPath(new URL('../fixtures/twins/ibm-mini.yaml', import.meta.url));
const NODES = ['cp-1', 'cp-2', 'worker-1', 'worker-2'];
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const CLOUD_CONFIG = '/etc/kubernetes/ibm-cloud-config.ini';
const CCM = { name: 'ibm-cloud-controller-manager', namespace: 'kube-system' };
/** ibm://<account>///<cluster>/<worker>: the twin's account (sha256 of cloud.project) and the spec's name. */
const PROVIDER_ID = /^ibm:\/\/f12b5b145bb3d0dc8077a9c84c411b16\/\/\/ibm-mini\/kube-[0-9a-f]{20}-[a-z0-9-]+$/;

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

const tainted = (n: V1Node) => n.spec?.taints?.some((t) => t.key === UNINITIALIZED) ?? false;

async function nodes(e: E2E): Promise<V1Node[]> {
  return (await e.t.core.listNode()).items;
}

/** The resourceVersion of every object the control-plane and kubelet steps could touch through the API. */
async function apiState(e: E2E): Promise<Record<string, string | undefined>> {
  const cm = await e.t.core.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
  const pods = await e.t.core.listNamespacedPod({
    namespace: 'kube-system',
    labelSelector: 'tier=control-plane',
  });
  return {
    'kubeadm-config': cm.metadata?.resourceVersion,
    // A static pod restarted by its kubelet is a new mirror pod: a new uid.
    ...Object.fromEntries(pods.items.map((p) => [`pod ${p.metadata?.name}`, p.metadata?.uid])),
  };
}

function driftCheck(e: E2E) {
  return checkDrift(localContext({ clients: e.t, pollMs: 10 }), {
    clusterId: 'ibm-mini',
    provider: 'ibm',
    expect: 'external',
    deep: true,
    // Every node counts, however new: the twin's are seconds old.
    stuckAfterMs: 0,
  });
}

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('IBM Cloud, external from birth: ccm-migrate upgrade --provider ibm', () => {
    it('installs the CCM, which initialises every node; a second run and a drift check find nothing to do', async () => {
      e2e = await startE2E(await loadTwinSpec(IBM_MINI), server);
      const { t } = e2e;
      expect((await nodes(e2e)).map((n) => [n.metadata?.name, n.spec?.providerID, tainted(n)])).toEqual(
        NODES.map((n) => [n, undefined, true]),
      );
      // Before the install, drift says what is missing: the CCM, and every node waiting for it.
      const before = await driftCheck(e2e);
      expect(before.status).toBe('drifted');
      expect(before.findings.map((f) => `${f.kind} ${f.object}`).sort()).toEqual([
        'ccm-missing Deployment kube-system/ibm-cloud-controller-manager',
        ...NODES.map((n) => `node-stuck-uninitialized Node ${n}`),
      ]);
      const files = await nodeFiles(t);
      const api = await apiState(e2e);

      const started = Date.now();
      let ccmLeads = 0;
      const progress: Progress[] = [];
      const up = await e2e.upgrade({
        options: { provider: 'ibm' },
        onProgress: (p) => {
          progress.push(p);
          if (p.step === 'activate-ccm' && p.message.startsWith('CCM leader')) ccmLeads = Date.now();
        },
      });
      expect(up.error).toBeUndefined();
      expect(up.status).toBe('SUCCEEDED');
      const preflight = (up.output as { preflight: PreflightResult }).preflight;
      expect(preflight.alreadyExternal).toBe(false);
      // Two control-plane nodes, yet no leader migration: no kube-controller-manager runs cloud loops.
      expect(preflight.leaderMigration).toEqual({
        enabled: false,
        reason: expect.stringMatching(/IBM Cloud never had an in-tree provider/),
      });
      expect(progress.find((p) => p.step === 'preflight' && !p.node)?.message).toMatch(
        /4 node\(s\) wait uninitialised for the IBM Cloud cloud-controller-manager: the upgrade installs it/,
      );

      // Every node initialised by the CCM the run installed: providerID in IBM's format, taint gone.
      for (const node of await nodes(e2e)) {
        const name = node.metadata?.name ?? '';
        expect(node.spec?.providerID, name).toMatch(PROVIDER_ID);
        expect(node.spec?.providerID, name).toBe(t.twin.cloud.instanceFor(name)?.providerID);
        expect(tainted(node), name).toBe(false);
        expect(node.metadata?.labels?.['topology.kubernetes.io/region'], name).toBe('eu-de');
      }
      const synced = (await t.core.listEventForAllNamespaces()).items.filter(
        (ev) => ev.reason === 'Synced' && ev.source?.component === 'cloud-node-controller',
      );
      expect(new Set(synced.map((ev) => ev.involvedObject.name))).toEqual(new Set(NODES));
      const ccm = await t.apps.readNamespacedDeployment(CCM);
      const container = ccm.spec?.template.spec?.containers.find(
        (c) => c.name === 'cloud-controller-manager',
      );
      expect(container?.image).toBe(
        'registry.ng.bluemix.net/armada-master/ibm-cloud-controller-manager:v1.30.5-1',
      );
      expect(container?.args).toEqual(
        expect.arrayContaining(['--cloud-provider=ibm', `--cloud-config=${CLOUD_CONFIG}`]),
      );
      expect(ccm.spec?.template.spec?.volumes).toContainEqual(
        expect.objectContaining({ hostPath: { path: CLOUD_CONFIG, type: 'File' } }),
      );

      // The control-plane and kubelet steps ran and changed nothing, and said so: not one node file written
      // (no backup either), no static pod restarted, kubeadm-config untouched.
      expect(await nodeFiles(t)).toEqual(files);
      expect(await apiState(e2e)).toEqual(api);
      const said = (step: string) =>
        progress.filter((p) => p.step === step).map((p) => `${p.node} ${p.message}`);
      expect(said('move-control-plane-node')).toEqual([
        'cp-1 manifests already external',
        'cp-2 manifests already external',
      ]);
      expect(said('flip-kubelet').sort()).toEqual(NODES.map((n) => `${n} kubelet already external`));
      expect(said('enable-leader-migration')).toEqual([]);
      expect(said('stage-ccm')).toEqual([
        expect.stringMatching(/objects applied, [1-9]\d* changed, CCM at 0 replicas/),
      ]);

      // The second run: already external, verified, nothing changed.
      const ccmVersion = ccm.metadata?.resourceVersion;
      const again = await e2e.upgrade();
      expect(again.status).toBe('SUCCEEDED');
      expect((again.output as { preflight: PreflightResult }).preflight).toMatchObject({
        alreadyExternal: true,
        provider: 'ibm',
      });
      expect(await nodeFiles(t)).toEqual(files);
      expect(await apiState(e2e)).toEqual(api);
      expect((await t.apps.readNamespacedDeployment(CCM)).metadata?.resourceVersion).toBe(ccmVersion);

      // Drift: the run store expects external IBM, and the cluster is.
      expect(await expectationFromRuns(e2e.store, 'ibm-mini')).toMatchObject({
        expect: 'external',
        provider: 'ibm',
      });
      const after = await driftCheck(e2e);
      expect(after.error).toBeUndefined();
      expect(after).toMatchObject({ status: 'clean', findings: [] });

      // The monitor saw the state the cluster was born in (nodes waiting, no cloud controller) until the CCM
      // the run installed took over, and nothing else: never two cloud controllers, never a node left waiting.
      await t.twin.monitor.stop();
      const violations = t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable');
      expect(violations).toEqual([
        expect.objectContaining({
          kind: 'uninitialized-without-cloud-controller',
          detail: { nodes: NODES, nodeCount: NODES.length },
        }),
      ]);
      expect(Date.parse(violations[0]?.start ?? '')).toBeLessThan(started);
      expect(Date.parse(violations[0]?.end ?? '')).toBeLessThanOrEqual(ccmLeads);
    });

    it('plans the install: no node file to change, the CCM’s objects to create, nothing in-tree, no way back', async () => {
      e2e = await startE2E(await loadTwinSpec(IBM_MINI), server);
      const plan = await planUpgrade({ clients: e2e.t, options: { provider: 'ibm' }, pollMs: 10 });
      expect(plan.action).toMatch(
        /wait uninitialised for the IBM Cloud cloud-controller-manager: the upgrade installs it \(IBM Cloud never had an in-tree provider: nothing in-tree to move, no downgrade target\)/,
      );
      expect(plan.files).toEqual([]);
      expect(plan.examination.awaitingCcm).toEqual(NODES);
      expect(plan.leaderMigration.enabled).toBe(false);
      expect(plan.objects.map((o) => o.action)).toEqual(plan.objects.map(() => 'create'));
      expect(plan.objects.map((o) => o.object)).toContain(
        'Deployment kube-system/ibm-cloud-controller-manager',
      );

      expect((await e2e.upgrade({ options: { provider: 'ibm' } })).status).toBe('SUCCEEDED');
      // Once installed, the providerIDs name IBM: no --provider needed, and nothing left to do.
      const after = await planUpgrade({ clients: e2e.t, options: {}, pollMs: 10 });
      expect(after.action).toBe('the cluster is already external: an upgrade would only verify it');
      expect(after.files).toEqual([]);
      expect(after.objects.map((o) => o.action)).toEqual(after.objects.map(() => 'unchanged'));

      // And no way back: a downgrade is refused before anything changes.
      const down = await e2e.downgrade();
      expect(down.status).toBe('FAILED');
      expect(down.error?.name).toBe('PreflightFailed');
      expect(down.error?.cause).toMatch(/IBM Cloud \(ibm\) never had an in-tree cloud provider/);
    });
  });
});

describe('IBM Cloud, external from birth: what preflight refuses', () => {
  async function expectRefused(
    setup: { edits?: FileEdit[]; before?: (run: E2E) => Promise<void>; provider?: 'ibm' },
    message: RegExp,
  ): Promise<void> {
    e2e = await startE2E(await fixtureSpec(IBM_MINI, { edits: setup.edits ?? [] }));
    await setup.before?.(e2e);
    const files = await nodeFiles(e2e.t);
    const result = await e2e.upgrade({ options: setup.provider ? { provider: setup.provider } : {} });
    expect(result.status).toBe('FAILED');
    expect(result.error?.name, result.error?.cause).toBe('PreflightFailed');
    expect(result.error?.cause).toMatch(message);
    expect(await nodeFiles(e2e.t)).toEqual(files);
    await expect(e2e.t.apps.readNamespacedDeployment(CCM)).rejects.toThrow();
  }

  it('refuses without --provider, naming --provider ibm: nothing in the cluster names IBM', async () => {
    await expectRefused(
      {},
      /cannot tell the cluster’s provider: .*--provider ibm for a cluster external from birth/,
    );
  });

  it('refuses a node that does not wait for a CCM (a kubelet without --cloud-provider=external)', async () => {
    const noCloudProvider: FileEdit = {
      group: 'worker',
      file: '/var/lib/kubelet/kubeadm-flags.env',
      edit: (text) => text.replace('--cloud-provider=external ', ''),
    };
    await expectRefused(
      { edits: [noCloudProvider], provider: 'ibm' },
      /the ibm cloud-controller-manager would not initialise 2 node\(s\): worker-1 \(providerID missing, and no node\.cloudprovider\.kubernetes\.io\/uninitialized taint/,
    );
  });

  it('refuses a missing cloud config on a control-plane node, naming the file and the node', async () => {
    await expectRefused(
      {
        provider: 'ibm',
        before: async ({ t }) => rm(hostPath(t.twin.stateDir, 'cp-2', CLOUD_CONFIG)),
      },
      /reads its cloud config from \/etc\/kubernetes\/ibm-cloud-config\.ini .*cp-2 has none/,
    );
  });
});
