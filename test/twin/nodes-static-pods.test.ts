/**
 * Static pods of the node simulation: mirror pods, manifest edits, additions and removals picked up by the
 * file check, crash loops of binaries that refuse their cloud flags, and kube-apiserver readiness.
 */
import { rename } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { TO_EXTERNAL_STATIC_PODS } from '../../lib/steps/edits.ts';
import { hostPath } from '../../lib/twin/context.ts';
import {
  agentPod,
  condition,
  dropCloudFlags,
  type Harness,
  isReady,
  KAS,
  KCM,
  KUBELET_FLAGS,
  kubeletExternal,
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

const mirror = (name: string): Loose => h?.pod('kube-system', `${name}-cp-1`);
const command = (pod: Loose): string[] => pod?.spec?.containers?.[0]?.command ?? [];

/** A v1.27 cluster (in-tree aws gone) whose kubelets and kube-apiserver already run without it. */
async function v127(): Promise<Harness> {
  return startHarness(
    await miniSpec({
      overrides: { kubernetesVersion: 'v1.27.16' },
      edits: [
        { group: 'cp', file: KUBELET_FLAGS, edit: kubeletExternal },
        { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal },
        { group: 'cp', file: KAS, edit: dropCloudFlags },
      ],
    }),
  );
}

describe('mirror pods', () => {
  it('mirrors each static pod as the kubelet does: name, annotations, owner, tolerations, Running and Ready', async () => {
    h = await startHarness(await miniSpec());
    const ip = h.cloud.placement('cp-1')?.ip;
    const node: Loose = h.node('cp-1');
    for (const name of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'etcd']) {
      const pod = mirror(name);
      const a = pod.metadata.annotations;
      expect(a['kubernetes.io/config.hash']).toMatch(/^[0-9a-f]{32}$/);
      expect(a['kubernetes.io/config.mirror']).toBe(a['kubernetes.io/config.hash']);
      expect(a['kubernetes.io/config.source']).toBe('file');
      expect(a['kubernetes.io/config.seen']).toBeTruthy();
      expect(pod.metadata.labels.component).toBe(name);
      expect(pod.metadata.ownerReferences).toEqual([
        { apiVersion: 'v1', kind: 'Node', name: 'cp-1', uid: node.metadata.uid, controller: true },
      ]);
      expect(pod.spec.nodeName).toBe('cp-1');
      expect(pod.spec.priority).toBe(2000001000);
      expect(pod.spec.tolerations).toContainEqual({ operator: 'Exists', effect: 'NoExecute' });
      expect(pod.status.phase).toBe('Running');
      expect(isReady(pod)).toBe(true);
      expect(pod.status.hostIP).toBe(ip);
      expect(pod.status.podIP).toBe(ip);
      const cs = pod.status.containerStatuses[0];
      expect(cs).toMatchObject({ name, ready: true, started: true, restartCount: 0 });
      expect(cs.state.running.startedAt).toBeTruthy();
    }
    expect(h.nodes.apiServerReady()).toBe(true);
    expect(h.store.list('pods').items.filter((p) => p.spec && (p.spec as Loose).nodeName !== 'cp-1')).toEqual(
      [],
    );
  });

  it('recreates a mirror pod someone deleted, with a new uid', async () => {
    h = await startHarness(await miniSpec());
    const before = mirror('kube-scheduler');
    h.store.delete('pods', 'kube-system', 'kube-scheduler-cp-1');
    const after = await waitFor(() => mirror('kube-scheduler'), 'the mirror pod back');
    expect(after.metadata.uid).not.toBe(before.metadata.uid);
    expect(after.metadata.annotations['kubernetes.io/config.hash']).toBe(
      before.metadata.annotations['kubernetes.io/config.hash'],
    );
  });
});

describe('manifest changes', () => {
  it('stops the pod (Ready=False), then replaces its mirror with one for the new spec', async () => {
    h = await startHarness(await miniSpec());
    const before = mirror('kube-controller-manager');
    await h.write('cp-1', KCM, dropCloudFlags(await h.read('cp-1', KCM)));
    const stopping = await waitFor(() => {
      const pod = mirror('kube-controller-manager');
      return pod?.metadata.uid === before.metadata.uid && !isReady(pod) && pod;
    }, 'the old pod stopping');
    expect(condition(stopping, 'Ready')?.reason).toBe('ContainersNotReady');
    const after = await waitFor(() => {
      const pod = mirror('kube-controller-manager');
      return pod && pod.metadata.uid !== before.metadata.uid && isReady(pod) && pod;
    }, 'the new pod Ready');
    expect(command(after).some((a) => a.startsWith('--cloud-provider'))).toBe(false);
    expect(after.metadata.annotations['kubernetes.io/config.hash']).not.toBe(
      before.metadata.annotations['kubernetes.io/config.hash'],
    );
  });

  it('sees a manifest the node agent rewrote at once, as inotify tells the real file source', async () => {
    // A file check of a minute: only the agent's write can start the new pod within the wait.
    const spec = await miniSpec();
    h = await startHarness(
      await miniSpec({ overrides: { latencies: { ...spec.latencies, fileCheck: 60_000 } } }),
    );
    const before = mirror('kube-controller-manager');
    h.store.create(
      'pods',
      agentPod('cp-1', 'kube-system', { op: 'set-flags', runId: 'r', staticPods: TO_EXTERNAL_STATIC_PODS }),
    );
    const after = await waitFor(() => {
      const pod = mirror('kube-controller-manager');
      return pod && pod.metadata.uid !== before.metadata.uid && isReady(pod) && pod;
    }, 'the new pod Ready');
    expect(command(after)).toContain('--cloud-provider=external');
  });

  it('loses the only kube-apiserver while it restarts and gets it back', async () => {
    h = await startHarness(await miniSpec());
    await h.write('cp-1', KAS, dropCloudFlags(await h.read('cp-1', KAS)));
    await waitFor(() => !h?.nodes.apiServerReady(), 'the API server to go');
    await waitFor(() => h?.nodes.apiServerReady(), 'the API server back');
    expect(command(mirror('kube-apiserver')).some((a) => a.startsWith('--cloud-provider'))).toBe(false);
  });

  it('deletes the mirror of a removed manifest and starts a new one (Pending, then Ready); hidden files are not read', async () => {
    h = await startHarness(await miniSpec());
    const dir = hostPath(h.stateDir, 'cp-1', '/etc/kubernetes/manifests');
    await rename(`${dir}/kube-scheduler.yaml`, `${dir}/.kube-scheduler.yaml`);
    await waitFor(() => !mirror('kube-scheduler'), 'the scheduler mirror pod gone');
    const extra = (await h.read('cp-1', '/etc/kubernetes/manifests/.kube-scheduler.yaml'))
      .replace('name: kube-scheduler', 'name: extra')
      .replace('  namespace: kube-system\n', '');
    const states: string[] = [];
    h.store.subscribe((e) => {
      const status = e.object.status as Loose;
      if (e.object.metadata.name === 'extra-cp-1' && status?.containerStatuses) {
        const state = status.containerStatuses[0].state;
        states.push(`${status.phase}/${state.waiting?.reason ?? Object.keys(state)[0]}`);
      }
    });
    await h.write('cp-1', '/etc/kubernetes/manifests/extra.yaml', extra);
    await waitFor(() => isReady(h?.pod('default', 'extra-cp-1')), 'the new static pod Ready, in "default"');
    expect(states).toEqual(['Pending/ContainerCreating', 'Running/running']);
  });

  it('stops a pod whose manifest no longer parses (the file source drops it)', async () => {
    h = await startHarness(await miniSpec());
    await h.write('cp-1', KCM, 'apiVersion: v1\nkind: Pod\nmetadata: [\n');
    await waitFor(() => !mirror('kube-controller-manager'), 'the mirror pod deleted');
    expect(mirror('kube-scheduler')).toBeDefined();
  });
});

describe('crash loops', () => {
  it('crash-loops kube-controller-manager with in-tree aws on v1.27, restartCount growing, until the manifest is fixed', async () => {
    h = await v127();
    const looping = await waitFor(() => {
      const pod = mirror('kube-controller-manager');
      return pod?.status?.containerStatuses?.[0]?.restartCount >= 3 && pod;
    }, 'restarts of the crashing container');
    const cs = looping.status.containerStatuses[0];
    expect(cs.state.waiting.reason).toBe('CrashLoopBackOff');
    expect(cs.lastState.terminated).toMatchObject({
      exitCode: 1,
      reason: 'Error',
      message: 'cloud provider could not be initialized: unknown cloud provider "aws"',
    });
    expect(cs.ready).toBe(false);
    expect(looping.status.phase).toBe('Running');
    expect(isReady(looping)).toBe(false);
    expect(h.nodes.apiServerReady()).toBe(true);

    await h.write('cp-1', KCM, dropCloudFlags(await h.read('cp-1', KCM)));
    await waitFor(() => isReady(mirror('kube-controller-manager')), 'the fixed KCM Ready');
  });

  it('crash-loops a kube-apiserver that still has --cloud-provider on v1.33, and the API is gone', async () => {
    h = await startHarness(
      await miniSpec({
        overrides: { kubernetesVersion: 'v1.33.1' },
        edits: [
          { group: 'cp', file: KUBELET_FLAGS, edit: kubeletExternal },
          { group: 'worker', file: KUBELET_FLAGS, edit: kubeletExternal },
          { group: 'cp', file: KCM, edit: dropCloudFlags },
          {
            group: 'cp',
            file: KAS,
            edit: (t) =>
              t
                .replace(/^ *- --cloud-config=.*\n/m, '')
                .replace('--cloud-provider=aws', '--cloud-provider=external'),
          },
        ],
      }),
    );
    expect(h.nodes.apiServerReady()).toBe(false);
    const kas = mirror('kube-apiserver');
    expect(kas.status.containerStatuses[0].lastState.terminated.message).toBe(
      'unknown flag: --cloud-provider',
    );
    expect(isReady(mirror('kube-controller-manager'))).toBe(true);
  });
});
