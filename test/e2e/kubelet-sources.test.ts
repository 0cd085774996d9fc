/**
 * Where a kubelet's settings come from besides the flag files ccm-migrate edits (issue 15, item 6):
 * - a systemd drop-in with an ExecStart of its own that names the in-tree provider after kubeadm's
 *   variables: the twin reads the unit and its drop-ins as systemd does, so that kubelet keeps
 *   `--cloud-provider=aws` whatever kubeadm-flags.env says; preflight sees it on the running kubelet's
 *   command line and refuses, before any change;
 * - a KubeletConfiguration drop-in of the kubelet's --config-dir (1.28+) that sets an in-tree gate: it
 *   would outlast the flip, so preflight refuses the node before any change;
 * - kubeadm's kubelet-config ConfigMap, which `kubeadm upgrade node` writes the node's config file from:
 *   its in-tree gates go with the node's, and come back on the way back.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { hostPath } from '../../lib/twin/context.ts';
import { loadTwinSpec, parseTwinSpec } from '../../lib/twin/spec.ts';
import { UPGRADE_STATES } from '../../state-machines/upgrade.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { FIXTURES, KUBELET_FLAGS, kubeletExternal } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, originalsOnly, startE2E } from './harness.ts';

const AZURE = fileURLToPath(new URL('../fixtures/twins/azure-mini.yaml', import.meta.url));

const DROP_IN = '/etc/systemd/system/kubelet.service.d/20-cloud.conf';
const EXEC_START = `[Service]
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS --cloud-provider=aws
`;

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

describe.each(apiServersUnderTest())('on the $name', (server) => {
  it('refuses, changing nothing, a node whose kubelet takes --cloud-provider from a drop-in it does not edit', async () => {
    const spec = await loadTwinSpec(FIXTURES.awsMini);
    const groups = spec.nodeGroups.map((g) =>
      g.name === 'worker' ? { ...g, files: { ...g.files, [DROP_IN]: EXEC_START } } : g,
    );
    e2e = await startE2E(parseTwinSpec({ ...spec, nodeGroups: groups }, FIXTURES.awsMini), server);
    const files = await nodeFiles(e2e.t);

    const result = await e2e.upgrade();
    expect(result.status).toBe('FAILED');
    expect(result.error?.name).toBe('PreflightFailed');
    expect(result.error?.cause).toContain('worker-1: --cloud-provider=aws');
    expect(result.error?.cause).toContain('worker-2: --cloud-provider=aws');
    expect(result.error?.cause).not.toContain('cp-1');
    expect(await nodeFiles(e2e.t)).toEqual(files);
    expect(e2e.t.twin.nodes.kubelet('worker-1').flags.get('cloud-provider')).toBe('aws');
  });

  it('refuses, changing nothing, a node whose --config-dir drop-in sets an in-tree gate', async () => {
    const spec = await loadTwinSpec(AZURE);
    const dir = '/etc/kubernetes/kubelet.conf.d';
    const dropIns = {
      '/etc/default/kubelet': `KUBELET_EXTRA_ARGS=--config-dir=${dir}\n`,
      // 1.29's kubelet reads the directory only with this variable set (alpha).
      '/etc/systemd/system/kubelet.service.d/20-config-dir.conf':
        '[Service]\nEnvironment="KUBELET_CONFIG_DROPIN_DIR_ALPHA=on"\n',
      [`${dir}/10-gates.conf`]:
        'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  DisableCloudProviders: false\n',
    };
    const groups = spec.nodeGroups.map((g) =>
      g.name === 'worker' ? { ...g, files: { ...g.files, ...dropIns } } : g,
    );
    e2e = await startE2E(parseTwinSpec({ ...spec, nodeGroups: groups }, AZURE), server);
    const files = await nodeFiles(e2e.t);
    expect(e2e.t.twin.nodes.kubelet('worker-1').ready).toBe(true);

    const result = await e2e.upgrade();
    expect(result.error?.name, result.error?.cause).toBe('PreflightFailed');
    expect(result.error?.cause).toContain(
      `worker-1: feature gate DisableCloudProviders=false from the --config-dir drop-in ${dir}/10-gates.conf`,
    );
    expect(result.error?.cause).toContain('worker-2: feature gate DisableCloudProviders=false');
    expect(result.error?.cause).not.toContain('cp-1');
    expect(await nodeFiles(e2e.t)).toEqual(files);
  });

  it('rolls back, naming the flag, when the restarted kubelet does not run what the flip wrote', async () => {
    e2e = await startE2E(await loadTwinSpec(FIXTURES.awsMini), server);
    const { t } = e2e;
    const start = await nodeFiles(t);
    // After preflight looked, someone gives worker-1's kubelet its provider from a drop-in of its own.
    const dropIn = hostPath(t.twin.stateDir, 'worker-1', DROP_IN);
    const result = await e2e.upgrade({
      onEvent: (event) => {
        if (event.type === 'StateEntered' && event.state.name === UPGRADE_STATES.kubelets) {
          mkdirSync(path.dirname(dropIn), { recursive: true });
          writeFileSync(dropIn, EXEC_START);
        }
      },
    });

    expect(result.error?.name, result.error?.cause).toBe('RolledBack');
    expect(result.error?.cause).toContain(
      'the kubelet on worker-1 does not run what the flip wrote, restarted: it runs --cloud-provider=aws, which its files do not give',
    );
    rmSync(dropIn);
    await t.twin.nodes.restartKubelet('worker-1');
    expect(originalsOnly(await nodeFiles(t), start)).toEqual(originalsOnly(start, start));
  });

  it('restarts a kubelet whose files a cut run already flipped, and goes on', async () => {
    // No credential plugin: the flip writes nothing but the provider, which the cut run already wrote.
    const spec = await loadTwinSpec(FIXTURES.awsMini);
    const nodeGroups = spec.nodeGroups.map((g) => ({
      ...g,
      files: Object.fromEntries(
        Object.entries(g.files).filter(([p]) => !p.endsWith('ecr-credential-provider')),
      ),
    }));
    e2e = await startE2E(parseTwinSpec({ ...spec, nodeGroups }, FIXTURES.awsMini), server);
    const flags = hostPath(e2e.t.twin.stateDir, 'worker-1', KUBELET_FLAGS);
    const restarts = e2e.t.twin.nodes.kubelet('worker-1').restarts;
    const result = await e2e.upgrade({
      onEvent: (event) => {
        // A run cut after the agent wrote worker-1's flags and before its kubelet restarted.
        if (event.type === 'StateEntered' && event.state.name === UPGRADE_STATES.kubelets) {
          writeFileSync(flags, kubeletExternal(readFileSync(flags, 'utf8')));
        }
      },
    });

    expect(result.error, result.error?.cause).toBeUndefined();
    expect(e2e.t.twin.nodes.kubelet('worker-1').restarts).toBe(restarts + 1);
    expect(e2e.t.twin.nodes.kubelet('worker-1').flags.get('cloud-provider')).toBe('external');
  });

  it('takes the in-tree gates out of kubeadm’s kubelet-config with the nodes’, and puts its text back on the way back', async () => {
    e2e = await startE2E(await loadTwinSpec(AZURE), server);
    const read = async () =>
      (await e2e?.t.core.readNamespacedConfigMap({ name: 'kubelet-config', namespace: 'kube-system' }))?.data
        ?.kubelet;

    // The fixture's kubelet-config has the in-tree gates in its featureGates.
    const original = (await read()) as string;
    expect(original).toMatch(/DisableCloudProviders: false/);
    expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
    // Only its in-tree gates go, and the featureGates they leave empty.
    expect(await read()).toBe(original.replace(/featureGates:\n( {2}Disable.*\n)+/, ''));
    const down = await e2e.downgrade();
    expect(down.error).toBeUndefined();
    expect(await read()).toBe(original);
  });
});
