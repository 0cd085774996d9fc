/**
 * Image credentials across the flip (issue 15, item 4). On the Azure twin (v1.29, in-tree provider with
 * DisableKubeletCloudCredentialProviders=false and --azure-container-registry-config), a Deployment pulls
 * from a private ACR: the twin's kubelets pull it with their in-tree credentials, which the flip turns off
 * (the gate is on by default in 1.29). Without acr-credential-provider on the nodes the upgrade is refused
 * before any change; with it, the flip points each kubelet at the plugin, a pod started after the upgrade
 * still pulls, and the way back leaves every node file as it was.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadTwinSpec, parseTwinSpec, type TwinSpec } from '../../lib/twin/spec.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { eventually, KUBELET_FLAGS, type TestTwin } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, originalsOnly, startE2E } from './harness.ts';

const AZURE = fileURLToPath(new URL('../fixtures/twins/azure-mini.yaml', import.meta.url));
const IMAGE = 'ccmtwinshop.azurecr.io/shop/api:1.4';
const PLUGIN = '/var/lib/kubelet/credential-provider/acr-credential-provider';
const CONFIG = '/etc/kubernetes/image-credential-provider-config.yaml';

const DEPLOYMENT = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'api', namespace: 'default' },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'api' } },
    template: {
      metadata: { labels: { app: 'api' } },
      spec: { containers: [{ name: 'api', image: IMAGE }] },
    },
  },
};

/** The Azure fixture (the plugin on every node) with a Deployment from a private ACR, the plugin taken off `without`. */
async function azureSpec(without: readonly string[] = []): Promise<TwinSpec> {
  const spec = await loadTwinSpec(AZURE);
  const nodeGroups = spec.nodeGroups.map((g) => {
    if (!without.includes(g.name)) return g;
    const { [PLUGIN]: _plugin, ...files } = g.files;
    return { ...g, files };
  });
  return parseTwinSpec({ ...spec, nodeGroups, objects: [...spec.objects, DEPLOYMENT] }, AZURE);
}

/** The api pods, once every one of them runs: which nodes pulled the image shows on their status.images. */
async function apiPodsRunning(t: TestTwin, count: number): Promise<void> {
  await eventually(
    async () => {
      const pods = (await t.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=api' })).items;
      return pods.length === count && pods.every((p) => p.status?.phase === 'Running') && pods;
    },
    { what: `${count} api pods Running` },
  );
}

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

describe.each(apiServersUnderTest())('on the $name', (server) => {
  it('refuses, changing nothing, a flip that would leave kubelets without the credentials the cluster’s images need', async () => {
    e2e = await startE2E(await azureSpec(['worker']), server);
    await apiPodsRunning(e2e.t, 2);
    const files = await nodeFiles(e2e.t);

    const result = await e2e.upgrade();
    expect(result.status).toBe('FAILED');
    expect(result.error?.name).toBe('PreflightFailed');
    expect(result.error?.cause).toContain(IMAGE);
    expect(result.error?.cause).toContain('acr-credential-provider is not installed on worker-1, worker-2');
    expect(result.error?.cause).not.toContain('cp-1');
    expect(await nodeFiles(e2e.t)).toEqual(files);
  });

  it('moves each kubelet to acr-credential-provider: a pod started after the upgrade pulls, and the way back removes it', async () => {
    e2e = await startE2E(await azureSpec(), server);
    const { t } = e2e;
    await apiPodsRunning(t, 2);
    const start = await nodeFiles(t);

    const up = await e2e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    for (const node of ['cp-1', 'worker-1', 'worker-2']) {
      const flags = await t.readFile(node, KUBELET_FLAGS);
      expect(flags).toContain(`--image-credential-provider-config=${CONFIG}`);
      expect(flags).toContain('--image-credential-provider-bin-dir=/var/lib/kubelet/credential-provider');
      // The plugin reads the file the in-tree provider did; the deprecated flag goes (1.30 refuses it).
      expect(flags).not.toContain('--azure-container-registry-config');
      const config = await t.readFile(node, CONFIG);
      expect(config).toContain('name: acr-credential-provider');
      expect(config).toContain('"/etc/kubernetes/azure.json"');
    }
    // New pods (the old ones replaced) pull the private image with the plugin's credentials.
    await t.core.deleteCollectionNamespacedPod({ namespace: 'default', labelSelector: 'app=api' });
    await apiPodsRunning(t, 2);

    const down = await e2e.downgrade();
    expect(down.error).toBeUndefined();
    const after = await nodeFiles(t);
    expect(originalsOnly(after, start)).toEqual(originalsOnly(start, start));
    expect([...after.keys()].filter((f) => f.endsWith(CONFIG))).toEqual([]);
  });
});
