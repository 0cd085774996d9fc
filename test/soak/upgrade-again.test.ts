/**
 * An upgrade run again on a migrated cluster changes nothing and succeeds, for a provider whose CCM needs a
 * cloud config (Azure's azure.json): kube-controller-manager no longer names it, the deployed CCM does.
 * Found by the soak (`npm run soak -- --runs 1 --seed 9 --quick`: the second request, once the first had
 * finished, ended InvalidInput "the Azure cloud-controller-manager needs the cluster's cloud config
 * (azure.json), and none was given", exit 2).
 */
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { type E2E, nodeFiles, startE2E } from '../e2e/harness.ts';

const AZURE_MINI = fileURLToPath(new URL('../fixtures/twins/azure-mini.yaml', import.meta.url));

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

it('succeeds again on a migrated Azure cluster, changing no node file', async () => {
  e2e = await startE2E(await loadTwinSpec(AZURE_MINI));
  const first = await e2e.upgrade();
  expect(first.status, first.error?.cause).toBe('SUCCEEDED');
  const migrated = await nodeFiles(e2e.t);

  const again = await e2e.upgrade();

  expect(again.status, again.error?.cause).toBe('SUCCEEDED');
  expect(await nodeFiles(e2e.t)).toEqual(migrated);
  const record = await e2e.store.get(again.clusterId, again.runId);
  expect(record?.snapshot).toMatchObject({ deployedCloudConfig: '/etc/kubernetes/azure.json' });
});
