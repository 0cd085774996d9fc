/**
 * Drift on the twin: clean after an upgrade; each kind of tampering reported with its kind and object and
 * nothing else; a shallow check never writes; an unobservable cluster is unknown.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkDrift } from '../../lib/drift/check.ts';
import type { Finding } from '../../lib/drift/findings.ts';
import { localContext } from '../../lib/local/context.ts';
import { ccmPodsGone, type E2E, startE2E } from '../e2e/harness.ts';
import { type ApiServerUnderTest, apiServersUnderTest, IN_PROCESS } from '../real-api.ts';
import { eventually, FIXTURES, fixtureSpec, isReady } from '../twin/running-twin.ts';

const CREDENTIALS = '/etc/kubernetes/image-credential-provider-config.yaml';

const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const KUBELET_FLAGS = '/var/lib/kubelet/kubeadm-flags.env';
const CCM = { name: 'aws-cloud-controller-manager', namespace: 'kube-system' };

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function upgraded(server: ApiServerUnderTest): Promise<E2E> {
  e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini), server);
  expect((await e2e.upgrade()).status).toBe('SUCCEEDED');
  return e2e;
}

async function drift(run: E2E, opts: { deep?: boolean; expect?: 'external' | 'in-tree' } = {}) {
  return checkDrift(localContext({ clients: run.t, pollMs: 10 }), {
    clusterId: 'aws-mini',
    provider: 'aws',
    expect: opts.expect ?? 'external',
    deep: opts.deep ?? false,
    stuckAfterMs: 0,
  });
}

const kinds = (findings: readonly Finding[]) => findings.map((f) => `${f.kind} ${f.object}`).sort();

describe.each(apiServersUnderTest())('on the $name', (server) => {
  describe('drift checks on the AWS twin', () => {
    it('are clean after an upgrade, shallow and deep, and a shallow check writes nothing', async () => {
      const run = await upgraded(server);
      const writes = () => {
        const { byVerb } = run.t.twin.api.stats();
        return ['create', 'update', 'patch', 'delete'].map((v) => byVerb[v] ?? 0);
      };
      const before = writes();
      const shallow = await drift(run);
      expect(writes()).toEqual(before);
      expect(shallow).toMatchObject({ status: 'clean', findings: [] });
      expect(shallow.apiRequests).toBeLessThanOrEqual(20);
      expect((await drift(run, { deep: true })).status).toBe('clean');
    });

    it('say unknown, not clean, when the cluster cannot be observed', async () => {
      const run = await upgraded(server);
      run.t.twin.faults.add({ kind: 'error', rate: 1, code: 503, verb: 'list', resource: 'nodes' });
      const report = await drift(run);
      expect(report.status).toBe('unknown');
      expect(report.error).toMatch(/KubeApiThrottled: list nodes/);
    });
  });
});

// What a check finds in what the twin's nodes and objects say: the real server adds nothing to these but time (it serves the
// clean check and the unobservable one above).
describe.each([IN_PROCESS])('on the $name', (server) => {
  describe('drift checks on the AWS twin', () => {
    it('report a kube-apiserver given its --cloud-provider back, and nothing else', async () => {
      const run = await upgraded(server);
      const text = await run.t.readFile('cp-1', KAS);
      await run.t.writeFile(
        'cp-1',
        KAS,
        text.replace('    - --client-ca-file', '    - --cloud-provider=aws\n    - --client-ca-file'),
      );
      await eventually(async () => {
        const pod = await run.t.core.readNamespacedPod({
          name: 'kube-apiserver-cp-1',
          namespace: 'kube-system',
        });
        return isReady(pod as never) && pod.spec?.containers[0]?.command?.includes('--cloud-provider=aws');
      });
      expect(kinds((await drift(run)).findings)).toEqual([
        'control-plane-flags Pod kube-system/kube-apiserver-cp-1',
      ]);
    });

    it('report a kubelet flipped back in a deep check only', async () => {
      const run = await upgraded(server);
      const text = await run.t.readFile('worker-1', KUBELET_FLAGS);
      await run.t.writeFile(
        'worker-1',
        KUBELET_FLAGS,
        text.replace('--cloud-provider=external', '--cloud-provider=aws'),
      );
      await run.t.twin.nodes.restartKubelet('worker-1');
      await eventually(async () => isReady((await run.t.core.readNode({ name: 'worker-1' })) as never));
      expect((await drift(run)).status).toBe('clean');
      expect(kinds((await drift(run, { deep: true })).findings)).toEqual([
        'kubelet-flags Node worker-1 kubelet',
      ]);
    });

    it('report a CCM scaled to zero, a node left tainted meanwhile, and a deleted CCM', async () => {
      const run = await upgraded(server);
      const d = await run.t.apps.readNamespacedDeployment(CCM);
      await run.t.apps.replaceNamespacedDeployment({
        ...CCM,
        body: { ...d, spec: { ...d.spec, replicas: 0 } as never },
      });
      const externalFlags = await run.t.readFile('worker-1', KUBELET_FLAGS);
      // The flags name the credential plugin's config the flip wrote: a joining node needs it too.
      const credentials = await run.t.readFile('worker-1', CREDENTIALS);
      await run.t.twin.nodes.join('worker', {
        files: { [KUBELET_FLAGS]: externalFlags, [CREDENTIALS]: credentials },
      });
      await ccmPodsGone(run.t);
      expect(kinds((await drift(run)).findings)).toEqual([
        'ccm-not-ready Deployment kube-system/aws-cloud-controller-manager',
        'node-stuck-uninitialized Node worker-3',
      ]);
      await run.t.apps.deleteNamespacedDeployment(CCM);
      expect(kinds((await drift(run)).findings)).toContain(
        'ccm-missing Deployment kube-system/aws-cloud-controller-manager',
      );
    });

    it('report kubeadm-config carrying the in-tree flags again', async () => {
      const run = await upgraded(server);
      const cm = await run.t.core.readNamespacedConfigMap({
        name: 'kubeadm-config',
        namespace: 'kube-system',
      });
      const text = cm.data?.ClusterConfiguration ?? '';
      await run.t.core.replaceNamespacedConfigMap({
        name: 'kubeadm-config',
        namespace: 'kube-system',
        body: {
          ...cm,
          data: { ClusterConfiguration: text.replace('cloud-provider: external', 'cloud-provider: aws') },
        },
      });
      expect(kinds((await drift(run)).findings)).toEqual([
        'kubeadm-config-flags ConfigMap kube-system/kubeadm-config',
      ]);
    });

    it('report the CCM still there when the cluster should be in-tree', async () => {
      const run = await upgraded(server);
      expect(kinds((await drift(run, { expect: 'in-tree' })).findings)).toEqual([
        'ccm-present Deployment kube-system/aws-cloud-controller-manager',
        'control-plane-flags Pod kube-system/kube-controller-manager-cp-1',
        'kubeadm-config-flags ConfigMap kube-system/kubeadm-config',
      ]);
    });
  });
});
