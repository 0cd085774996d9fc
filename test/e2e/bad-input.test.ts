/**
 * Bad input ends an upgrade in preflight with a clear message and no change: not one node file written,
 * no object applied. (Unreachable APIs, unknown contexts and broken kubeconfigs: test/cli/upgrade.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_CONFIGMAP, runAgentJob } from '../../lib/kube/agent-job.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { localContext } from '../../lib/local/context.ts';
import { runLocally } from '../../lib/local/engine.ts';
import { migrationWorkflow, stepHandlers } from '../../lib/local/migration.ts';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import { FIXTURES, type FileEdit, fixtureSpec, kubeletExternal } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const KCM = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
const KUBELET_FLAGS = '/var/lib/kubelet/kubeadm-flags.env';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function expectRefused(
  setup: {
    edits?: FileEdit[];
    before?: (run: E2E) => Promise<void>;
    provider?: 'azure';
    images?: TwinSpec['images'];
    agentImage?: string;
  },
  error: string,
  message: RegExp,
): Promise<void> {
  const spec = await fixtureSpec(FIXTURES.awsMini, { edits: setup.edits ?? [] });
  e2e = await startE2E({ ...spec, images: setup.images ?? {} });
  await setup.before?.(e2e);
  const files = await nodeFiles(e2e.t);
  const result = await e2e.upgrade({
    options: setup.provider ? { provider: setup.provider } : {},
    waitMs: 500,
    ...(setup.agentImage ? { agentImage: setup.agentImage } : {}),
  });
  expect(result.status).toBe('FAILED');
  expect(result.error?.name, result.error?.cause).toBe(error);
  expect(result.error?.cause).toMatch(message);
  expect(await nodeFiles(e2e.t)).toEqual(files);
  const sas = await e2e.t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
  expect(sas.items.map((s) => s.metadata?.name)).not.toContain('cloud-controller-manager');
  const record = await e2e.store.get(result.clusterId, result.runId);
  expect(record?.status).toBe('failed');
}

describe('an upgrade refused in preflight', () => {
  it('refuses a --provider the cluster contradicts', async () => {
    await expectRefused(
      { provider: 'azure' },
      'PreflightFailed',
      /--provider azure does not match the cluster, which runs aws/,
    );
  });

  it('refuses a node file the agent cannot parse, naming it', async () => {
    await expectRefused(
      {
        before: async ({ t }) => {
          await t.writeFile('cp-1', KCM, 'apiVersion: v1\nkind: Pod\nspec: {containers: [\n');
        },
      },
      'AgentFailed',
      /kube-controller-manager\.yaml/,
    );
  });

  it('refuses nodes whose instance the external CCM would not find, naming them', async () => {
    // Kubelets flipped by hand with no CCM: the nodes registered without a providerID.
    const external: FileEdit = { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal };
    await expectRefused(
      { edits: [external] },
      'PreflightFailed',
      /would not find the instance of 2 node\(s\) and would delete them: worker-1 \(providerID missing\), worker-2/,
    );
  });

  it('refuses a cluster half-migrated by a run it does not know', async () => {
    const kcmExternal: FileEdit = {
      group: 'cp',
      file: KCM,
      edit: (text) =>
        text
          .replace('--cloud-provider=aws', '--cloud-provider=external')
          .replace(/^ *- --cloud-config=.*\n/m, ''),
    };
    await expectRefused(
      { edits: [kcmExternal] },
      'PreflightFailed',
      /half-migrated by a run ccm-migrate does not know/,
    );
  });

  it('refuses an agent bundle edited since it was applied, at the first agent Job', async () => {
    await expectRefused(
      {
        before: async ({ t }) => {
          // These clients applied the bundle: the run does not read it again, the Job's launcher checks it.
          const deadline = Deadline.in(Number.POSITIVE_INFINITY);
          await runAgentJob(t, {
            node: 'cp-1',
            request: { op: 'inspect', runId: 'r' },
            pollMs: 10,
            deadline,
          });
          const cm = await t.core.readNamespacedConfigMap({
            name: AGENT_CONFIGMAP,
            namespace: 'kube-system',
          });
          const edited = { 'agent.mjs': `${cm.data?.['agent.mjs']}\n// edited\n` };
          await t.core.replaceNamespacedConfigMap({
            name: AGENT_CONFIGMAP,
            namespace: 'kube-system',
            body: { ...cm, data: edited },
          });
        },
      },
      'AgentBundleMismatch',
      /the agent bundle in ConfigMap kube-system\/ccm-migrate-agent is not the one this run applied.*nothing on node cp-1 was changed/,
    );
  });

  it('refuses an agent image without nsenter, at the first agent Job', async () => {
    const image = 'mirror.example.com/library/node:22-alpine';
    await expectRefused(
      { images: { [image]: { lacks: ['nsenter'] } }, agentImage: image },
      'AgentImageUnfit',
      /^the agent image mirror\.example\.com\/library\/node:22-alpine has no nsenter; .*nothing on node cp-1 was changed/,
    );
    // The first Job alone says so: the others, started beside it to wait for their go, are deleted unrun.
    const jobs = await e2e?.t.batch.listNamespacedJob({ namespace: 'kube-system' });
    expect(jobs?.items.map((j) => j.metadata?.name)).toEqual([]);
  });

  it('ends ClusterLocked for a second run of a cluster another run holds, and leaves that run alone', async () => {
    const run = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    e2e = run;
    await run.store.begin({ clusterId: 'aws-mini', runId: 'up-other', kind: 'upgrade' });
    // As in AWS, where each request names its own run: not local mode, which resumes the holder.
    const result = await runLocally({
      workflow: migrationWorkflow('upgrade'),
      handlers: stepHandlers(() => ({ ...localContext({ clients: run.t, pollMs: 10 }), store: run.store })),
      input: { clusterId: 'aws-mini', runId: 'up-second', maxUnavailable: 1, options: {} },
    });
    expect(result.error?.name, result.error?.cause).toBe('ClusterLocked');
    expect(result.error?.cause).toMatch(/held by upgrade run up-other/);
    expect((await run.store.current('aws-mini'))?.runId).toBe('up-other');
    expect(await run.store.get('aws-mini', 'up-second')).toBeUndefined();
  });
});
