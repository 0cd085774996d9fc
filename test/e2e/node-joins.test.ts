/**
 * Nodes that join later (issue 23, item 3): after an upgrade, a node of the worker group joins from the
 * group's original files (the launch template the upgrade could not edit) and comes back in-tree. A deep
 * drift check reports it, `drift --remediate` flips it as the upgrade flips a kubelet (backed up, verified,
 * recorded as a run), and drift is then clean.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { driftCommand } from '../../lib/cli/drift.ts';
import { CliError, EXIT } from '../../lib/cli/exit-codes.ts';
import type { DriftReport } from '../../lib/drift/findings.ts';
import { textSink } from '../cli/text-sink.ts';
import { apiServersUnderTest } from '../real-api.ts';
import { eventually, FIXTURES, fixtureSpec, isReady } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

const KUBELET_FLAGS = '/var/lib/kubelet/kubeadm-flags.env';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

/** `ccm-migrate drift --cluster-id aws-mini --deep [--remediate]`, its reports parsed from the JSON it prints. */
async function drift(
  run: E2E,
  remediate: boolean,
  deep = true,
): Promise<{ printed: unknown[]; exit: number }> {
  const out = textSink();
  let exit: number = EXIT.ok;
  await driftCommand({
    clients: run.t,
    store: run.store,
    clusterId: 'aws-mini',
    deep,
    json: true,
    out,
    waitMs: 10_000,
    pollMs: 10,
    ...(remediate ? { remediate: { maxUnavailable: 1 } } : {}),
  }).catch((err: unknown) => {
    if (!(err instanceof CliError)) throw err;
    exit = err.exitCode;
  });
  // One JSON document per report (and the remediation's result between them).
  const printed = out
    .text()
    .split(/\n(?=\{)/)
    .filter((t) => t.trim())
    .map((t) => JSON.parse(t));
  return { printed, exit };
}

const findings = (report: unknown) =>
  (report as DriftReport).findings.map((f) => `${f.kind} ${f.object}: ${f.seen}`);

describe.each(apiServersUnderTest())('on the $name', (server) => {
  it('a node that joins after the upgrade from the old template is reported, flipped by --remediate, and drift is then clean', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
    const run = e2e;
    expect((await run.upgrade()).status).toBe('SUCCEEDED');
    expect((await drift(run, false)).exit).toBe(EXIT.ok);

    // Weeks later the autoscaler adds a worker from the launch template, which still says in-tree.
    run.t.twin.faults.add({ kind: 'nodeJoins', group: 'worker', after: 0 });
    const joined = await eventually(
      async () => {
        const node = await run.t.core.readNode({ name: 'worker-3' }).catch(() => undefined);
        return node && isReady(node as never) && node;
      },
      { what: 'worker-3 to join Ready', timeoutMs: 10_000 },
    );
    expect(joined.spec?.providerID).toMatch(/^aws:\/\/\//);
    expect(await run.t.readFile('worker-3', KUBELET_FLAGS)).toMatch(/--cloud-provider=aws/);

    const reported = await drift(run, false);
    expect(reported.exit).toBe(EXIT.drifted);
    expect(findings(reported.printed[0])).toEqual([
      'kubelet-flags Node worker-3 kubelet: --cloud-provider=aws with --cloud-config',
    ]);

    // A shallow check cannot see kubelets: remediating from one is refused before anything is read.
    expect(await drift(run, true, false)).toEqual({ printed: [], exit: EXIT.badInput });
    // A remediation cut short still holds the cluster; the next --remediate resumes it.
    await run.store.begin({ clusterId: 'aws-mini', runId: 'remediate-cut', kind: 'remediate' });

    const remediated = await drift(run, true);
    expect(remediated.exit).toBe(EXIT.ok);
    const [before, remediation, after] = remediated.printed as [
      DriftReport,
      Record<string, unknown>,
      DriftReport,
    ];
    expect(findings(before)).toEqual([
      'kubelet-flags Node worker-3 kubelet: --cloud-provider=aws with --cloud-config',
    ]);
    expect(remediation).toMatchObject({ flipped: ['worker-3'], verification: { nodes: 4 } });
    expect(after).toMatchObject({ status: 'clean', findings: [] });

    // Flipped as the upgrade flips a kubelet: the file, the running kubelet, the Node it keeps.
    const flags = await run.t.readFile('worker-3', KUBELET_FLAGS);
    expect(flags).toMatch(/--cloud-provider=external/);
    expect(flags).not.toMatch(/--cloud-config/);
    expect(run.t.twin.nodes.kubelet('worker-3').flags.get('cloud-provider')).toBe('external');
    const node = await run.t.core.readNode({ name: 'worker-3' });
    expect(node.spec?.providerID).toBe(joined.spec?.providerID);
    expect(node.spec?.taints ?? []).toEqual([]);

    // A run of its own in the store, which the next drift check does not take for a migration.
    const runs = await run.store.list('aws-mini');
    expect(runs.map((r) => `${r.kind} ${r.runId} ${r.status}`)).toEqual([
      `upgrade ${runs[0]?.runId} succeeded`,
      'remediate remediate-cut succeeded',
    ]);
    expect(Object.keys(runs[1]?.steps ?? {})).toEqual(['kubelet/worker-3']);
    expect((await drift(run, false)).exit).toBe(EXIT.ok);

    await run.t.twin.monitor.stop();
    expect(run.t.twin.monitor.violations().filter((v) => v.kind !== 'api-unavailable')).toEqual([]);
  });
});
