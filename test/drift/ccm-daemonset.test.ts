/**
 * Drift of a CCM that an upgrade ran as a DaemonSet: clean once migrated; staged on no node (its "scaled to
 * zero") or deleted, reported against the DaemonSet; present beside in-tree controllers only while it runs.
 */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { checkDrift } from '../../lib/drift/check.ts';
import type { Finding } from '../../lib/drift/findings.ts';
import { localContext } from '../../lib/local/context.ts';
import { STAGED_NODE_SELECTOR } from '../../lib/providers/render.ts';
import { ccmPodsGone, type E2E, startE2E } from '../e2e/harness.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';

const CCM = { name: 'aws-cloud-controller-manager', namespace: 'kube-system' };
const DS = 'DaemonSet kube-system/aws-cloud-controller-manager';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function drift(run: E2E, expect: 'external' | 'in-tree') {
  return checkDrift(localContext({ clients: run.t, pollMs: 10 }), {
    clusterId: 'aws-mini',
    provider: 'aws',
    expect,
    deep: false,
    stuckAfterMs: 60_000,
  });
}

const kinds = (findings: readonly Finding[]) => findings.map((f) => `${f.kind} ${f.object}`);

describe('drift of a CCM run as a DaemonSet', () => {
  it('is clean once migrated, and reports the DaemonSet staged, deleted, or running beside in-tree controllers', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const run = e2e;
    expect((await run.upgrade({ options: { ccmWorkload: 'daemonset' } })).status).toBe('SUCCEEDED');
    const clean = await drift(run, 'external');
    expect(clean).toMatchObject({ status: 'clean', findings: [] });
    expect(clean.apiRequests).toBeLessThanOrEqual(20);
    expect(kinds((await drift(run, 'in-tree')).findings)).toContain(`ccm-present ${DS}`);

    await run.t.apps.patchNamespacedDaemonSet(
      {
        ...CCM,
        body: { spec: { template: { spec: { nodeSelector: STAGED_NODE_SELECTOR } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await ccmPodsGone(run.t);
    const staged = (await drift(run, 'external')).findings;
    expect(kinds(staged)).toContain(`ccm-not-ready ${DS}`);
    expect(staged.find((f) => f.kind === 'ccm-not-ready')?.seen).toBe('staged on no node, 0 Ready');
    expect(kinds((await drift(run, 'in-tree')).findings)).not.toContain(`ccm-present ${DS}`);

    await run.t.apps.deleteNamespacedDaemonSet(CCM);
    expect(kinds((await drift(run, 'external')).findings)).toContain(
      'ccm-missing Deployment kube-system/aws-cloud-controller-manager',
    );
  });
});
