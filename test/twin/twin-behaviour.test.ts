/**
 * The twin as a whole, driven only through the real @kubernetes/client-node over HTTP (and, where a real
 * operator would, through a node's files): the behaviours issue 2 lists under "Done means".
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { AGENT_NAME, AGENT_REQUEST_ENV, AgentResultSchema } from '../../lib/agent/protocol.ts';
import { TwinStartError } from '../../lib/twin/twin.ts';
import {
  dropCloudFlags,
  eventually,
  FIXTURES,
  fixtureSpec,
  fixtureTwins,
  isReady,
  KAS,
  KCM,
  KUBELET_FLAGS,
  kubeletExternal,
  startTestTwin,
  type TestTwin,
} from './running-twin.ts';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

const start = fixtureTwins();

async function mirrorPod(t: TestTwin, component: string, node: string): Promise<V1Pod> {
  return t.core.readNamespacedPod({ name: `${component}-${node}`, namespace: 'kube-system' });
}

function command(pod: V1Pod): string[] {
  return pod.spec?.containers[0]?.command ?? [];
}

describe('a twin started from a kubeadm spec with the in-tree AWS provider', () => {
  it('registers every node Ready, with the providerID the in-tree kubelet sets, and mirror pods for the static pods', async () => {
    const t = await start(FIXTURES.awsMini);
    const nodes = (await t.core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual(['cp-1', 'worker-1', 'worker-2']);
    for (const node of nodes) {
      expect(isReady(node as never)).toBe(true);
      expect(node.spec?.providerID).toBe(t.twin.cloud.instanceFor(node.metadata?.name ?? '')?.providerID);
      expect(node.spec?.taints?.some((taint) => taint.key === UNINITIALIZED) ?? false).toBe(false);
    }
    const kas = await mirrorPod(t, 'kube-apiserver', 'cp-1');
    expect(kas.metadata?.annotations?.['kubernetes.io/config.mirror']).toBeTruthy();
    expect(kas.metadata?.annotations?.['kubernetes.io/config.hash']).toBeTruthy();
    expect(isReady(kas as never)).toBe(true);
    expect(command(kas)).toContain('--cloud-provider=aws');
  });

  it('restarts a static pod when its manifest changes on the node, with the new spec', async () => {
    const t = await start(FIXTURES.awsMini);
    const before = await mirrorPod(t, 'kube-controller-manager', 'cp-1');
    await t.writeFile('cp-1', KCM, dropCloudFlags(await t.readFile('cp-1', KCM)));
    const after = await eventually(
      async () => {
        const pod = await mirrorPod(t, 'kube-controller-manager', 'cp-1');
        return pod.metadata?.uid !== before.metadata?.uid && isReady(pod as never) && pod;
      },
      { what: 'the new kube-controller-manager mirror pod to be Ready' },
    );
    expect(command(after).some((arg) => arg.startsWith('--cloud-provider'))).toBe(false);
    expect(after.metadata?.annotations?.['kubernetes.io/config.hash']).not.toBe(
      before.metadata?.annotations?.['kubernetes.io/config.hash'],
    );
  });

  it('loses its API while the only kube-apiserver restarts, records it, and gets it back', async () => {
    const t = await start(FIXTURES.awsMini);
    await t.writeFile('cp-1', KAS, dropCloudFlags(await t.readFile('cp-1', KAS)));
    await eventually(() => !t.twin.apiAvailable(), { what: 'the API to go away' });
    await expect(t.core.listNode()).rejects.toThrow();
    await eventually(() => t.twin.apiAvailable(), { what: 'the API to come back' });
    const kas = await eventually(async () => {
      const pod = await mirrorPod(t, 'kube-apiserver', 'cp-1');
      return isReady(pod as never) && pod;
    });
    expect(command(kas).some((arg) => arg.startsWith('--cloud-provider'))).toBe(false);
    await t.twin.monitor.stop();
    const lines = (await readFile(path.join(t.twin.stateDir, 'invariants.jsonl'), 'utf8')).trim().split('\n');
    const outage = lines.map((l) => JSON.parse(l)).find((v) => v.kind === 'api-unavailable');
    expect(outage?.durationMs).toBeGreaterThan(0);
  });
});

describe('API outage windows (fault)', () => {
  it('fails requests inside the window and serves them after it', async () => {
    const t = await start(FIXTURES.awsMini, {
      overrides: { faults: [{ kind: 'apiOutage', after: 0, duration: 1500 }] },
    });
    await expect(t.core.listNode()).rejects.toThrow();
    await eventually(async () => (await t.core.listNode()).items.length === 3, { what: 'the API back' });
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().map((v) => v.kind)).toContain('api-unavailable');
  });
});

describe('kubelets and the cloud-provider flag', () => {
  it('taints a node that registers with --cloud-provider=external and leaves its providerID to a CCM', async () => {
    const t = await start(FIXTURES.awsMini, {
      edits: [{ group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal }],
    });
    const worker = await t.core.readNode({ name: 'worker-1' });
    expect(worker.spec?.taints).toContainEqual(
      expect.objectContaining({ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }),
    );
    expect(worker.spec?.providerID).toBeUndefined();
  });

  it('keeps an existing Node as it was when its kubelet restarts with --cloud-provider=external', async () => {
    const t = await start(FIXTURES.awsMini);
    const before = await t.core.readNode({ name: 'worker-1' });
    await t.writeFile(
      'worker-1',
      KUBELET_FLAGS,
      kubeletExternal(await t.readFile('worker-1', KUBELET_FLAGS)),
    );
    await t.twin.nodes.restartKubelet('worker-1');
    await eventually(() => t.twin.nodes.kubelet('worker-1').ready, { what: 'kubelet back' });
    expect(t.twin.nodes.kubelet('worker-1').flags.get('cloud-provider')).toBe('external');
    const after = await t.core.readNode({ name: 'worker-1' });
    expect(after.spec?.taints ?? []).toEqual(before.spec?.taints ?? []);
    expect(after.spec?.providerID).toBe(before.spec?.providerID);
    expect(isReady(after as never)).toBe(true);
  });

  it('crash-loops kube-controller-manager with in-tree aws on v1.27, where the provider is gone', async () => {
    const t = await start(FIXTURES.awsMini, {
      overrides: { kubernetesVersion: 'v1.27.16' },
      // Everything but KCM already off the in-tree provider, as after a half-done manual migration.
      edits: [
        { group: 'cp', file: KAS, edit: dropCloudFlags },
        { group: 'cp', file: KUBELET_FLAGS, edit: kubeletExternal },
        { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal },
      ],
    });
    const pod = await eventually(async () => {
      const p = await mirrorPod(t, 'kube-controller-manager', 'cp-1');
      return p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' && p;
    });
    expect(isReady(pod as never)).toBe(false);
    expect(pod.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBe(1);
  });

  it('refuses to start when no kube-apiserver can run (in-tree aws flags on v1.27)', async () => {
    const spec = await fixtureSpec(FIXTURES.awsMini, { overrides: { kubernetesVersion: 'v1.27.16' } });
    // A healthy fixture's API is Ready in well under a second; 1.5 s is plenty to show it never will be.
    await expect(startTestTwin(spec, { readyTimeoutMs: 1500 })).rejects.toBeInstanceOf(TwinStartError);
  });

  it('leaves a node NotReady when it never comes back from a kubelet restart (fault)', async () => {
    const t = await start(FIXTURES.awsMini, {
      overrides: { faults: [{ kind: 'nodeNeverReturns', node: 'worker-2' }] },
    });
    await t.twin.nodes.restartKubelet('worker-2');
    await eventually(async () => !isReady((await t.core.readNode({ name: 'worker-2' })) as never));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(isReady((await t.core.readNode({ name: 'worker-2' })) as never)).toBe(false);
  });
});

/** A minimal external AWS CCM: what matters to the twin is the container name and --cloud-provider. */
function ccmDeployment(): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'aws-cloud-controller-manager', namespace: 'kube-system' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'ccm' } },
      template: {
        metadata: { labels: { app: 'ccm' } },
        spec: {
          nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
          tolerations: [
            { key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' },
            { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
          ],
          containers: [
            {
              name: 'cloud-controller-manager',
              image: 'registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.12',
              args: ['--cloud-provider=aws', '--leader-elect=true'],
            },
          ],
        },
      },
    },
  };
}

describe('cloud controllers and the invariant monitor', () => {
  it('initialises a tainted node once a CCM runs, and records the time it ran beside an in-tree KCM', async () => {
    const t = await start(FIXTURES.awsMini, {
      edits: [{ group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal }],
    });
    await t.objects.create(ccmDeployment() as never);
    const node = await eventually(
      async () => {
        const n = await t.core.readNode({ name: 'worker-1' });
        return !n.spec?.taints?.some((taint) => taint.key === UNINITIALIZED) && n;
      },
      { what: 'worker-1 initialised' },
    );
    const instance = t.twin.cloud.instanceFor('worker-1');
    expect(node.spec?.providerID).toBe(instance?.providerID);
    expect(node.metadata?.labels?.['topology.kubernetes.io/zone']).toBe(instance?.zone);
    expect(node.metadata?.labels?.['topology.kubernetes.io/region']).toBe('us-east-1');
    const lease = await t.coordination.readNamespacedLease({
      name: 'cloud-controller-manager',
      namespace: 'kube-system',
    });
    expect(lease.spec?.holderIdentity).toMatch(/^cp-1_/);
    await t.twin.monitor.stop();
    expect(t.twin.monitor.violations().map((v) => v.kind)).toContain('two-cloud-controllers');
  });

  it('records a tainted node while no cloud controller runs', async () => {
    const t = await start(FIXTURES.awsMini, {
      edits: [
        { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal },
        { group: 'cp', file: KCM, edit: dropCloudFlags },
      ],
    });
    await eventually(() => t.twin.controllers.active().length === 0 || undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await t.twin.monitor.stop();
    const found = t.twin.monitor
      .violations()
      .find((v) => v.kind === 'uninitialized-without-cloud-controller');
    expect(found?.detail).toMatchObject({ nodes: expect.arrayContaining(['worker-1', 'worker-2']) });
  });
});

describe('the node agent as a Job', () => {
  it('runs pinned to its node against that node’s files and reports through the termination message', async () => {
    const t = await start(FIXTURES.awsMini);
    const request = { op: 'inspect', runId: 'r1', paths: [KAS, '/etc/not-there'] };
    await t.batch.createNamespacedJob({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'agent-inspect-cp-1' },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { 'app.kubernetes.io/name': AGENT_NAME } },
            spec: {
              nodeName: 'cp-1',
              restartPolicy: 'Never',
              tolerations: [{ operator: 'Exists' }],
              containers: [
                {
                  name: 'agent',
                  image: 'node:22-alpine',
                  env: [{ name: AGENT_REQUEST_ENV, value: JSON.stringify(request) }],
                },
              ],
            },
          },
        },
      },
    });
    await eventually(
      async () => {
        const job = await t.batch.readNamespacedJob({ name: 'agent-inspect-cp-1', namespace: 'kube-system' });
        return job.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True');
      },
      { what: 'the agent Job to complete' },
    );
    const pods = await t.core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'batch.kubernetes.io/job-name=agent-inspect-cp-1',
    });
    const pod = pods.items[0];
    expect(pod?.spec?.nodeName).toBe('cp-1');
    const message = pod?.status?.containerStatuses?.[0]?.state?.terminated?.message ?? '';
    const result = AgentResultSchema.parse(JSON.parse(message));
    const kas = await t.readFile('cp-1', KAS);
    // The asked files first (hash, size, and how the agent read them), then the kubelet's flag sources.
    expect(result.files.slice(0, 2)).toEqual([
      {
        path: KAS,
        exists: true,
        size: Buffer.byteLength(kas),
        sha256: createHash('sha256').update(kas).digest('hex'),
        kind: 'static-pod',
        flags: expect.objectContaining({ 'cloud-provider': 'aws' }),
      },
      { path: '/etc/not-there', exists: false },
    ]);
    expect(result.files.map((f) => f.path)).toContain('/var/lib/kubelet/kubeadm-flags.env');
  });
});
