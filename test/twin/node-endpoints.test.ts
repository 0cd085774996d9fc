/**
 * A control-plane node's own address (kubeconfig-<node>): it answers through that node's kube-apiserver
 * alone, so it is refused while that one restarts after a manifest edit, cuts what was open through it, and
 * is back once the new pod is Ready; the other nodes' addresses answer all along.
 */
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ClusterUnreachableError } from '../../lib/errors.ts';
import { clientsFromKubeconfigFile, type KubeClients } from '../../lib/kube/clients.ts';
import { classifyApiError } from '../../lib/kube/errors.ts';
import { eventually, FIXTURES, fixtureSpec, KAS, startTestTwin, type TestTwin } from './running-twin.ts';

let running: TestTwin | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

/** A restart long enough to look at the node while it lasts. */
const RESTART_MS = 1500;

/** True when the address answers, 'unreachable' when the connection fails. */
async function answers(clients: KubeClients): Promise<true | 'unreachable'> {
  try {
    await clients.version.getCode();
    return true;
  } catch (err) {
    if (classifyApiError(err, 'get version') instanceof ClusterUnreachableError) return 'unreachable';
    throw err;
  }
}

describe('the twin: one control-plane node’s own address', () => {
  it('is refused while that node’s kube-apiserver restarts, and answers again once it is Ready', async () => {
    const base = await fixtureSpec(FIXTURES.awsHaMini);
    running = await startTestTwin(
      await fixtureSpec(FIXTURES.awsHaMini, {
        overrides: { latencies: { ...base.latencies, staticPodRestart: RESTART_MS } },
      }),
    );
    const t = running;
    const paths = t.twin.nodeKubeconfigPaths;
    expect(Object.keys(paths).sort()).toEqual(['cp-1', 'cp-2', 'cp-3']);
    const node = await t.core.readNode({ name: 'cp-1' });
    const ip = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    const server = parse(await readFile(paths['cp-1'] as string, 'utf8')).clusters[0].cluster
      .server as string;
    expect(new URL(server).hostname).toBe(ip);

    const cp1 = clientsFromKubeconfigFile(paths['cp-1'] as string);
    const cp2 = clientsFromKubeconfigFile(paths['cp-2'] as string);
    expect(await answers(cp1)).toBe(true);
    const pods = await cp1.core.listNamespacedPod({ namespace: 'kube-system' });
    expect(pods.items.length).toBeGreaterThan(0);

    // A watch open through cp-1 when its kube-apiserver stops is cut.
    let watchEnded = false;
    await cp1.watch.watch(
      '/api/v1/nodes',
      {},
      () => undefined,
      () => {
        watchEnded = true;
      },
    );
    const before = Date.now();
    await t.writeFile(
      'cp-1',
      KAS,
      (await t.readFile('cp-1', KAS)).replace(
        'tier: control-plane',
        'tier: control-plane\n    edited: "yes"',
      ),
    );
    await eventually(async () => (await answers(cp1)) === 'unreachable', {
      what: 'cp-1 refused',
    });
    await eventually(() => watchEnded, { what: 'the watch through cp-1 cut' });
    expect(await answers(cp2)).toBe(true);
    expect(await answers(t)).toBe(true);
    await eventually(async () => (await answers(cp1)) === true, {
      what: 'cp-1 back',
      timeoutMs: RESTART_MS * 4,
    });
    expect(Date.now() - before).toBeGreaterThanOrEqual(RESTART_MS);
  });
});
