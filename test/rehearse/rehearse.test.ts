/**
 * `rehearse` against a running twin standing in for the real cluster: the rehearsal migrates its own twin
 * and comes back clean while the cluster itself is left as it was; a node whose preflight refuses makes it
 * exit non-zero, naming the node.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { main } from '../../lib/cli/main.ts';
import { rehearseCommand } from '../../lib/cli/rehearse.ts';
import { loadTwinSpec, parseTwinSpec } from '../../lib/twin/spec.ts';
import { inProcessCli } from '../cli/in-process-cli.ts';
import { textSink } from '../cli/text-sink.ts';
import { nodeFiles } from '../e2e/harness.ts';
import { FIXTURES, startTestTwin, type TestTwin } from '../twin/running-twin.ts';

/** A kubelet drop-in that gives --cloud-provider where the upgrade does not edit it (preflight refuses). */
const DROP_IN = '/etc/systemd/system/kubelet.service.d/20-cloud.conf';
const EXEC_START = `[Service]
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS --cloud-provider=aws
`;

const cli = inProcessCli('rehearse');
let source: TestTwin | undefined;
afterEach(async () => {
  await source?.stop();
  source = undefined;
});

describe('rehearse', () => {
  it('migrates the twin and comes back clean, leaving the cluster as it was', async () => {
    source = await startTestTwin(await loadTwinSpec(FIXTURES.awsMini));
    const before = await nodeFiles(source);
    const out = textSink();

    const result = await rehearseCommand({
      clients: source,
      clusterId: 'c1',
      options: {},
      maxUnavailable: 2,
      stateDir: cli.dir,
      latencies: source.twin.spec.latencies,
      out,
    });

    expect(result.realRefusals).toEqual([]);
    expect(result.runs.map((r) => [r.kind, r.status])).toEqual([
      ['upgrade', 'SUCCEEDED'],
      ['downgrade', 'SUCCEEDED'],
    ]);
    expect(result.files?.map((f) => `${f.node}:${f.path}`)).toContain(
      'cp-1:/etc/kubernetes/manifests/kube-controller-manager.yaml',
    );
    expect(out.text()).toMatch(/upgrade on the twin: succeeded in [\d.]+ s\n\s+[\d.]+ s {2}\S/);
    expect(out.text()).toContain('verdict: clean');
    expect(out.text()).toContain('came back clean');
    // The real cluster: its files as they were, no CCM, no agent Job left behind.
    expect(await nodeFiles(source)).toEqual(before);
    const deployments = await source.apps.listNamespacedDeployment({ namespace: 'kube-system' });
    expect(deployments.items.map((d) => d.metadata?.name)).not.toContain('cloud-controller-manager');
    expect((await source.batch.listNamespacedJob({ namespace: 'kube-system' })).items).toEqual([]);
  });

  it('exits with the preflight code, naming the node, when a node would be refused', async () => {
    const spec = await loadTwinSpec(FIXTURES.awsMini);
    const groups = spec.nodeGroups.map((g) =>
      g.name === 'worker' ? { ...g, files: { ...g.files, [DROP_IN]: EXEC_START } } : g,
    );
    source = await startTestTwin(parseTwinSpec({ ...spec, nodeGroups: groups }));

    const code = await main([
      'rehearse',
      '--cluster-id',
      'c1',
      '--kubeconfig',
      source.twin.kubeconfigPath,
      '--state-dir',
      cli.dir,
    ]);

    expect(code).toBe(EXIT.preflightFailed);
    expect(cli.out).toMatch(
      /preflight refuses the real cluster: PreflightFailed: .*worker-1: --cloud-provider=aws/,
    );
    expect(cli.out).not.toMatch(/at .*\.ts:\d+/);
  });
});
