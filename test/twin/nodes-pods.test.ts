/**
 * Pods bound to a node, run by its kubelet model: long-running pods, Job pods that complete, node agent
 * pods that run the agent against the node's files, and a node whose kubelet is down.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_NAME, AGENT_REQUEST_ENV, AgentResultSchema } from '../../lib/agent/protocol.ts';
import { truncateMessage } from '../../lib/twin/nodes/workload-pods.ts';
import type { KubeObject } from '../../lib/twin/store.ts';
import {
  condition,
  type Harness,
  isReady,
  KAS,
  type Loose,
  miniSpec,
  startHarness,
  waitFor,
} from './nodes-harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

function pod(name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.9' }], ...spec },
  };
}

function agentPod(name: string, node: string, request: unknown): KubeObject {
  return pod(
    name,
    {
      nodeName: node,
      restartPolicy: 'Never',
      containers: [
        {
          name: 'agent',
          image: 'node:22-alpine',
          env: [{ name: AGENT_REQUEST_ENV, value: JSON.stringify(request) }],
        },
      ],
    },
    { 'app.kubernetes.io/name': AGENT_NAME },
  );
}

const current = (name: string): Loose => h?.pod('default', name);
/** An image pull long enough to tell from a pod start of the fixture's few milliseconds. */
const PULL_MS = 400;
const phase = (name: string): string | undefined => current(name)?.status?.phase;

describe('pods bound to a node', () => {
  it('runs a pod bound to a node: Running, Ready, with its node’s hostIP and a pod IP', async () => {
    h = await startHarness(await miniSpec());
    h.store.create('pods', pod('web', { nodeName: 'worker-1' }));
    const running = await waitFor(() => isReady(current('web')) && current('web'), 'the pod Ready');
    expect(running.status.phase).toBe('Running');
    for (const type of ['PodScheduled', 'Initialized', 'ContainersReady']) {
      expect(condition(running, type)?.status).toBe('True');
    }
    expect(running.status.hostIP).toBe(h.cloud.placement('worker-1')?.ip);
    expect(running.status.podIP).toMatch(/^10\.\d+\.\d+\.\d+$/);
    expect(running.status.podIP).not.toBe(running.status.hostIP);
    expect(running.status.startTime).toBeTruthy();
    expect(running.status.containerStatuses[0]).toMatchObject({ name: 'main', ready: true, started: true });
    expect(h.pod('default', 'web')?.status).toEqual(running.status);
  });

  it('completes a pod that does not restart (a Job pod) with exit code 0', async () => {
    h = await startHarness(await miniSpec());
    h.store.create('pods', pod('once', { nodeName: 'worker-2', restartPolicy: 'Never' }));
    await waitFor(() => phase('once') === 'Succeeded', 'the pod to succeed');
    const done = current('once');
    expect(done.status.containerStatuses[0].state.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    expect(condition(done, 'Ready')).toMatchObject({ status: 'False', reason: 'PodCompleted' });
  });

  it('leaves unbound pods to the scheduler', async () => {
    h = await startHarness(await miniSpec());
    h.store.create('pods', pod('unbound', {}));
    h.store.create('pods', pod('bound', { nodeName: 'worker-1' }));
    await waitFor(() => isReady(current('bound')), 'the bound pod Ready');
    expect(current('unbound').status).toBeUndefined();
  });

  it('starts no pod on a node whose kubelet is down, and starts it once the kubelet is back', async () => {
    h = await startHarness(
      await miniSpec({ overrides: { faults: [{ kind: 'nodeNeverReturns', node: 'worker-2' }] } }),
    );
    await h.nodes.restartKubelet('worker-2');
    h.store.create('pods', pod('waits', { nodeName: 'worker-2' }));
    // Ten times the pod start latency: long enough for a running kubelet to have started it.
    await new Promise((resolve) => setTimeout(resolve, (h?.ctx.spec.latencies.podStart ?? 10) * 10));
    expect(current('waits').status).toBeUndefined();
    h.faults.clear('nodeNeverReturns');
    await h.nodes.restartKubelet('worker-2');
    await waitFor(() => isReady(current('waits')), 'the pod Ready after the kubelet came back');
  });
});

describe('node agent pods', () => {
  it('runs the agent against the node’s files and reports its result in the termination message', async () => {
    h = await startHarness(await miniSpec());
    h.store.create(
      'pods',
      agentPod('inspect', 'cp-1', { op: 'inspect', runId: 'r1', paths: [KAS, '/etc/nothing'] }),
    );
    await waitFor(() => phase('inspect') === 'Succeeded', 'the agent pod to succeed');
    const terminated = current('inspect').status.containerStatuses[0].state.terminated;
    expect(terminated.exitCode).toBe(0);
    const result = AgentResultSchema.parse(JSON.parse(terminated.message));
    const kas = await h.read('cp-1', KAS);
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
      { path: '/etc/nothing', exists: false },
    ]);
    expect(result.files.map((f) => f.path)).toContain('/var/lib/kubelet/kubeadm-flags.env');
    expect(h.nodes.kubelet('cp-1').restarts).toBe(0);
  });

  it('pulls the agent image on the node’s first agent pod only (latencies.agentImagePull)', async () => {
    const base = await miniSpec();
    h = await startHarness(
      await miniSpec({ overrides: { latencies: { ...base.latencies, agentImagePull: PULL_MS } } }),
    );
    const run = async (name: string): Promise<number> => {
      const started = performance.now();
      h?.store.create('pods', agentPod(name, 'worker-1', { op: 'inspect', runId: 'r1' }));
      await waitFor(() => phase(name) === 'Succeeded', `agent pod ${name} to succeed`);
      return performance.now() - started;
    };

    const first = await run('first');
    const second = await run('second');

    expect(first).toBeGreaterThanOrEqual(PULL_MS);
    expect(second).toBeLessThan(PULL_MS);
  });

  it('fails the pod with exit code 1 when the agent answers not ok', async () => {
    h = await startHarness(await miniSpec());
    h.store.create('pods', agentPod('bad', 'worker-1', { op: 'explode' }));
    await waitFor(() => phase('bad') === 'Failed', 'the agent pod to fail');
    const terminated = current('bad').status.containerStatuses[0].state.terminated;
    expect(terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
    expect(JSON.parse(terminated.message)).toMatchObject({
      ok: false,
      error: expect.stringContaining('invalid agent request'),
    });
  });
});

describe('agent pods on an image that lacks a program', () => {
  it('does not start a container whose image lacks the program it runs', async () => {
    h = await startHarness(await miniSpec({ overrides: { images: { 'bare:1': { lacks: ['node'] } } } }));
    const bare: Loose = agentPod('bare', 'worker-1', { op: 'inspect', runId: 'r' });
    Object.assign(bare.spec.containers[0], { image: 'bare:1', command: ['node', '/x.mjs'] });
    h.store.create('pods', bare);
    await waitFor(() => phase('bare') === 'Failed', 'the pod to fail');
    expect(current('bare').status.containerStatuses[0].state.terminated).toMatchObject({
      exitCode: 128,
      reason: 'StartError',
      message: 'exec: "node": executable file not found in $PATH',
    });
  });
});

describe('termination messages', () => {
  it('are cut to the limit in bytes without splitting a character', () => {
    expect(truncateMessage('abc', 5)).toBe('abc');
    expect(truncateMessage('abcdef', 4)).toBe('abcd');
    expect(truncateMessage('aé€', 4)).toBe('aé');
    expect(Buffer.byteLength(truncateMessage('€'.repeat(2000)))).toBeLessThanOrEqual(4096);
  });
});
