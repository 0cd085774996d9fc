/**
 * An image override (a mirrored registry) on the twin: the plan shows it, the upgrade records it in its
 * snapshot, names it when staging the CCM and ends with the CCM running it; a plan afterwards finds
 * nothing to change, and the downgrade takes the same snapshot. A run resumed with other overrides keeps
 * those its snapshot recorded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renderPlan } from '../../lib/cli/plan.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import { ccmImageFor } from '../../lib/providers/catalog.ts';
import { ccmDeploymentRef } from '../../lib/providers/render.ts';
import { SnapshotSchema } from '../../lib/steps/snapshot.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

const MIRROR = 'mirror.example.internal:5000/provider-aws/cloud-controller-manager:v1.26.6';
const IMAGES = { 'cloud-controller-manager': MIRROR };

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

describe('an image override on the AWS twin', () => {
  it('is shown in the plan, recorded in the snapshot, and run by the CCM the upgrade starts', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const { t, store } = e2e;
    const catalog = ccmImageFor('aws', 'v1.26.15').image;
    expect(catalog).not.toBe(MIRROR);

    const plan = await planUpgrade({ clients: t, options: { images: IMAGES }, pollMs: 10 });
    expect(plan.images).toEqual([{ container: 'cloud-controller-manager', image: MIRROR, override: true }]);
    const text = renderPlan('c1', t.server, plan);
    expect(text).toContain(`  image cloud-controller-manager ${MIRROR} (override)\n`);
    expect(text).not.toContain(catalog);
    const withoutOverride = await planUpgrade({ clients: t, options: {}, pollMs: 10 });
    expect(renderPlan('c1', t.server, withoutOverride)).toContain(
      `  image cloud-controller-manager ${catalog}\n`,
    );

    const progress: string[] = [];
    const result = await e2e.upgrade({
      options: { images: IMAGES },
      onProgress: (p) => progress.push(`${p.step}: ${p.message}`),
    });
    expect(result.status, result.error?.cause).toBe('SUCCEEDED');
    expect(progress).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^stage-ccm: .*; cloud-controller-manager ${MIRROR.replace(/[.]/g, '\\.')} \\(override\\)$`,
        ),
      ),
    );

    const snapshot = SnapshotSchema.parse((await store.get(result.clusterId, result.runId))?.snapshot);
    expect(snapshot.images).toEqual(IMAGES);
    expect(snapshot.ccmImage).toBe(catalog);

    const deployment = await t.apps.readNamespacedDeployment(ccmDeploymentRef('aws'));
    const containers = deployment.spec?.template.spec?.containers ?? [];
    expect(containers.find((c) => c.name === 'cloud-controller-manager')?.image).toBe(MIRROR);
    expect(deployment.status?.readyReplicas).toBeGreaterThan(0);
    const pods = await t.core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'app.kubernetes.io/component=cloud-controller-manager',
    });
    const images = pods.items.flatMap((p) => p.spec?.containers.map((c) => c.image) ?? []);
    expect(images.length).toBeGreaterThan(0);
    expect(new Set(images)).toEqual(new Set([MIRROR]));

    // The same plan again: the cluster already runs what it would apply.
    const after = await planUpgrade({ clients: t, options: { images: IMAGES }, pollMs: 10 });
    expect(after.objects.map((o) => o.action)).toEqual(after.objects.map(() => 'unchanged'));

    const down = await e2e.downgrade();
    expect(down.status, down.error?.cause).toBe('SUCCEEDED');
    const downSnapshot = SnapshotSchema.parse((await store.get(down.clusterId, down.runId))?.snapshot);
    expect(downSnapshot.images).toEqual(IMAGES);
  });

  it('resumed with other overrides, keeps the images its first preflight recorded, and says so', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const { t, store } = e2e;
    // Cut once the CCM is staged, as a lost laptop would: the run stays unfinished.
    const cut = new AbortController();
    const first = await e2e.upgrade({
      options: { images: IMAGES },
      signal: cut.signal,
      onProgress: (p) => {
        if (p.step === 'stage-ccm') cut.abort();
      },
    });
    expect(first.status).toBe('ABORTED');
    const unfinished = await store.current(first.clusterId);
    expect(SnapshotSchema.parse(unfinished?.snapshot).images).toEqual(IMAGES);

    const other = MIRROR.replace('v1.26.6', 'v1.26.5');
    const progress: string[] = [];
    const again = await e2e.upgrade({
      options: { images: { 'cloud-controller-manager': other } },
      onProgress: (p) => progress.push(p.message),
    });
    expect(again.status, again.error?.cause).toBe('SUCCEEDED');
    expect(again).toMatchObject({ resumed: true, runId: first.runId });
    expect(progress).toContain(
      `the CCM keeps the images recorded before: cloud-controller-manager=${MIRROR} (asked now: cloud-controller-manager=${other})`,
    );
    const deployment = await t.apps.readNamespacedDeployment(ccmDeploymentRef('aws'));
    expect(deployment.spec?.template.spec?.containers.map((c) => c.image)).toEqual([MIRROR]);
  });
});
