import { describe, expect, it } from 'vitest';
import { controllerCandidate } from '../../lib/twin/cloud/candidates.ts';
import type { KubeObject } from '../../lib/twin/store.ts';

function pod(
  container: string,
  argv: string[],
  opts: { namespace?: string; ready?: boolean } = {},
): KubeObject {
  const [command, ...args] = argv;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: opts.namespace ?? 'kube-system', uid: 'u1' },
    spec: {
      nodeName: 'cp-1',
      containers: [{ name: 'sidecar' }, { name: container, command: [command], args }],
    },
    status: { conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }] },
  };
}

describe('controller pods, read from their flags', () => {
  it('finds an in-tree KCM, and one without cloud loops for external or another provider', () => {
    const kcm = (flag: string) =>
      controllerCandidate(pod('kube-controller-manager', ['kube-controller-manager', flag]), 'aws');
    expect(kcm('--cloud-provider=aws')).toMatchObject({
      kind: 'kube-controller-manager',
      cloudLoops: true,
      running: true,
    });
    expect(kcm('--cloud-provider=external')?.cloudLoops).toBe(false);
    expect(kcm('--cloud-provider=gce')?.cloudLoops).toBe(false);
    expect(kcm('--v=2')?.cloudLoops).toBe(false);
    // A kube-controller-manager container outside kube-system is no KCM of this cluster.
    expect(
      controllerCandidate(
        pod('kube-controller-manager', ['kcm', '--cloud-provider=aws'], { namespace: 'x' }),
        'aws',
      ),
    ).toBeUndefined();
  });

  it('has no in-tree ibm provider, but finds an ibm CCM', () => {
    const argv = ['kube-controller-manager', '--cloud-provider=ibm'];
    expect(controllerCandidate(pod('kube-controller-manager', argv), 'ibm')?.cloudLoops).toBe(false);
    const ccm = controllerCandidate(
      pod('cloud-controller-manager', ['/bin/ibm-ccm', '--cloud-provider=ibm'], { namespace: 'x' }),
      'ibm',
    );
    expect(ccm).toMatchObject({ kind: 'cloud-controller-manager', cloudLoops: true, namespace: 'x' });
  });

  it('reads --flag value and --flag=value, the last one winning, and booleans as pflag does', () => {
    const ccm = (...flags: string[]) =>
      controllerCandidate(pod('cloud-controller-manager', ['/ccm', ...flags]), 'aws');
    expect(ccm('--cloud-provider', 'aws')?.kind).toBe('cloud-controller-manager');
    expect(ccm('--cloud-provider=gce', '--cloud-provider=aws')).toBeDefined();
    expect(ccm('--cloud-provider=aws', '--cloud-provider=gce')).toBeUndefined();
    expect(ccm('--cloud-provider=aws')).toMatchObject({
      leaderElect: true,
      leaderMigration: false,
      concurrentNodeSyncs: 1,
    });
    expect(ccm('--cloud-provider=aws', '--leader-elect=false')?.leaderElect).toBe(false);
    // A bare boolean flag is true and does not take the next word.
    expect(ccm('--cloud-provider=aws', '--leader-elect', 'false')?.leaderElect).toBe(true);
    expect(ccm('--cloud-provider=aws', '--enable-leader-migration')?.leaderMigration).toBe(true);
    expect(ccm('--cloud-provider=aws', '--concurrent-node-syncs', '5')?.concurrentNodeSyncs).toBe(5);
  });

  it('counts a pod as running only while Ready and not being deleted', () => {
    const argv = ['/ccm', '--cloud-provider=aws'];
    expect(controllerCandidate(pod('cloud-controller-manager', argv, { ready: false }), 'aws')?.running).toBe(
      false,
    );
    const deleting = pod('cloud-controller-manager', argv);
    deleting.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
    expect(controllerCandidate(deleting, 'aws')?.running).toBe(false);
  });
});
