/**
 * Golden tests: each provider's rendered workload against the upstream reference manifest it was written
 * from (../shared/reference/upstream-manifests/), on what matters: flags, image repository, tolerations
 * and the CCM's RBAC rules. Every difference is declared here with its reason (the asset's header says
 * the same); an upstream change or an edit of ours that is not declared fails.
 */
import type { V1Container } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type KubeObject, renderCcmObjects } from '../../lib/providers/render.ts';
import { referenceRuns } from '../reference.ts';
import {
  container,
  difference,
  type FlagDiff,
  find,
  flagDiff,
  flagsOf,
  podSpec,
  repository,
  ruleAtoms,
  tolerationKeys,
  upstreamObjects,
} from './golden.ts';

interface Golden {
  readonly provider: 'azure' | 'gcp' | 'vsphere' | 'openstack' | 'ibm';
  /** A version of the upstream file's era, so that the image repositories are comparable. */
  readonly kubernetesVersion: string;
  readonly ours: { readonly kind: string; readonly name: string; readonly container: string };
  readonly upstream: {
    readonly file: string;
    readonly kind: string;
    readonly name: string;
    readonly container: string;
  };
  /** Where the ClusterRole is upstream, when not in `upstream.file`; null: upstream ships no RBAC. */
  readonly roleFile?: string | null;
  readonly role?: string;
  readonly flags: FlagDiff;
  /** Upstream tolerations ours leave out (`key effect`). */
  readonly tolerationsDropped: readonly string[];
  readonly rulesAdded?: readonly string[];
}

const CP_TOLERATIONS = [
  'node.cloudprovider.kubernetes.io/uninitialized NoSchedule',
  'node-role.kubernetes.io/control-plane NoSchedule',
];
const RENDERED_CONFIG = '/etc/kubernetes/cloud-config';

const GOLDEN: readonly Golden[] = [
  {
    provider: 'azure',
    kubernetesVersion: 'v1.29.4',
    ours: { kind: 'Deployment', name: 'cloud-controller-manager', container: 'cloud-controller-manager' },
    upstream: {
      file: 'azure/cloud-provider-azure/examples/out-of-tree/cloud-controller-manager.yaml',
      kind: 'Deployment',
      name: 'cloud-controller-manager',
      container: 'cloud-controller-manager',
    },
    flags: {
      added: {},
      // KCM keeps node IPAM and the CCM programs no routes: no CIDR and no route period to give it.
      removed: ['cluster-cidr', 'route-reconciliation-period'],
      changed: { 'allocate-node-cidrs': 'false', 'configure-cloud-routes': 'false', v: '2' },
    },
    tolerationsDropped: [],
  },
  {
    provider: 'azure',
    kubernetesVersion: 'v1.29.4',
    ours: { kind: 'DaemonSet', name: 'cloud-node-manager', container: 'cloud-node-manager' },
    upstream: {
      file: 'azure/cloud-provider-azure/examples/out-of-tree/cloud-node-manager.yaml',
      kind: 'DaemonSet',
      name: 'cloud-node-manager',
      container: 'cloud-node-manager',
    },
    role: 'cloud-node-manager',
    // Upstream: "only set to true when --configure-cloud-routes=true in cloud-controller-manager".
    flags: { added: {}, removed: [], changed: { 'wait-routes': 'false' } },
    // `operator: Exists, effect: NoSchedule` tolerates it already.
    tolerationsDropped: ['node-role.kubernetes.io/master NoSchedule'],
  },
  {
    provider: 'gcp',
    kubernetesVersion: 'v1.30.4',
    ours: { kind: 'Deployment', name: 'cloud-controller-manager', container: 'cloud-controller-manager' },
    // The package's args "must be replaced by tooling": kops' rendering of it is the reference for flags.
    upstream: {
      file: 'gcp/kops-rendered/gcp-cloud-controller.addons.k8s.io-k8s-1.23_content.yaml',
      kind: 'DaemonSet',
      name: 'cloud-controller-manager',
      container: 'cloud-controller-manager',
    },
    roleFile: 'gcp/cloud-provider-gcp/deploy/packages/default/manifest.yaml',
    flags: {
      // kube-up runs 10 node-sync workers too; kops leaves the default.
      added: { 'concurrent-node-syncs': '10', 'configure-cloud-routes': 'false' },
      // By default KCM keeps node IPAM; render adds these back on request (see render.test.ts).
      removed: ['allocate-node-cidrs', 'cidr-allocator-type', 'cluster-cidr'],
      changed: {
        'cloud-config': `${RENDERED_CONFIG}/cloud.config`,
        'cluster-name': 'k8s',
        controllers: '*,-nodeipam',
      },
    },
    // kops tolerates every taint; ours name the ones a control-plane CCM meets.
    tolerationsDropped: ['* *'],
  },
  {
    provider: 'vsphere',
    kubernetesVersion: 'v1.29.4',
    ours: {
      kind: 'Deployment',
      name: 'vsphere-cloud-controller-manager',
      container: 'cloud-controller-manager',
    },
    upstream: {
      file: 'vsphere/cloud-provider-vsphere/releases/v1.29/vsphere-cloud-controller-manager.yaml',
      kind: 'DaemonSet',
      name: 'vsphere-cloud-controller-manager',
      container: 'vsphere-cloud-controller-manager',
    },
    flags: {
      // Said explicitly (its default is true): render carries kube-controller-manager's routes over, or none.
      // The node-sync workers: a run has the CCM initialise every node again (render.ts, CCM_NODE_SYNCS).
      added: {
        'cluster-name': 'k8s',
        'concurrent-node-syncs': '10',
        'configure-cloud-routes': 'false',
        'leader-elect': 'true',
      },
      removed: [],
      changed: { 'cloud-config': `${RENDERED_CONFIG}/vsphere.conf` },
    },
    tolerationsDropped: [],
  },
  {
    provider: 'openstack',
    kubernetesVersion: 'v1.25.16',
    ours: {
      kind: 'Deployment',
      name: 'openstack-cloud-controller-manager',
      container: 'cloud-controller-manager',
    },
    upstream: {
      file: 'openstack/cloud-provider-openstack/manifests/controller-manager/openstack-cloud-controller-manager-ds.yaml',
      kind: 'DaemonSet',
      name: 'openstack-cloud-controller-manager',
      container: 'openstack-cloud-controller-manager',
    },
    roleFile:
      'openstack/cloud-provider-openstack/manifests/controller-manager/cloud-controller-manager-roles.yaml',
    flags: {
      // Said explicitly (its default is true): render carries kube-controller-manager's routes over, or none.
      added: { 'configure-cloud-routes': 'false', 'leader-elect': 'true' },
      removed: [],
      // Upstream passes both through env vars ($(CLOUD_CONFIG), $(CLUSTER_NAME)).
      changed: { 'cloud-config': `${RENDERED_CONFIG}/cloud.conf`, 'cluster-name': 'k8s' },
    },
    tolerationsDropped: [],
  },
  {
    provider: 'ibm',
    kubernetesVersion: 'v1.31.4',
    ours: { kind: 'Deployment', name: 'ibm-cloud-controller-manager', container: 'cloud-controller-manager' },
    upstream: {
      file: 'ibm/cloud-provider-ibm/docs/examples/ibm-cloud-controller-manager.yaml',
      kind: 'Deployment',
      name: 'ibm-cloud-controller-manager',
      container: 'ibm-cloud-controller-manager',
    },
    roleFile: null,
    flags: {
      // Said explicitly (its default is true): render carries kube-controller-manager's routes over, or none.
      // The node-sync workers: a run has the CCM initialise every node again (render.ts, CCM_NODE_SYNCS).
      added: { 'cluster-name': 'k8s', 'concurrent-node-syncs': '10', 'configure-cloud-routes': 'false' },
      // In-cluster ServiceAccount and delegated authentication instead of a kubeconfig and TLS files.
      removed: [
        'authentication-kubeconfig',
        'authorization-kubeconfig',
        'client-ca-file',
        'kubeconfig',
        'port',
        'requestheader-client-ca-file',
        'tls-cert-file',
        'tls-cipher-suites',
        'tls-private-key-file',
      ],
      changed: { 'cloud-config': `${RENDERED_CONFIG}/ibm-cloud-config.ini` },
    },
    tolerationsDropped: [],
  },
];

function rendered(g: Golden): KubeObject[] {
  return renderCcmObjects({
    provider: g.provider,
    kubernetesVersion: g.kubernetesVersion,
    clusterName: 'k8s',
    replicas: 2,
    cloudConfig: '[Global]\n',
  });
}

interface Compared {
  readonly ours: KubeObject;
  readonly theirs: KubeObject;
  readonly ourContainer: V1Container;
  readonly theirContainer: V1Container;
}

/** Ours and upstream's workload and container, read when a test first asks for them (never at collection). */
function compared(g: Golden): () => Compared {
  let read: Compared | undefined;
  return () => {
    if (!read) {
      const ours = find(rendered(g), g.ours.kind, g.ours.name);
      const theirs = find(upstreamObjects(g.upstream.file), g.upstream.kind, g.upstream.name);
      const ourContainer = container(ours, g.ours.container);
      read = { ours, theirs, ourContainer, theirContainer: container(theirs, g.upstream.container) };
    }
    return read;
  };
}

describe.runIf(referenceRuns()).each(GOLDEN)(
  '$provider $ours.kind/$ours.name against upstream $upstream.file',
  (g) => {
    const both = compared(g);

    it('runs the upstream flags, but for the differences declared', () => {
      const { ourContainer, theirContainer } = both();
      expect(flagDiff(flagsOf(ourContainer), flagsOf(theirContainer))).toEqual(g.flags);
    });

    it('pulls from the upstream image repository', () => {
      const { ourContainer, theirContainer } = both();
      expect(repository(ourContainer.image)).toBe(repository(theirContainer.image));
    });

    it('tolerates what upstream tolerates, but for the tolerations declared', () => {
      const { ours, theirs } = both();
      const mine = tolerationKeys(podSpec(ours));
      expect(difference(tolerationKeys(podSpec(theirs)), mine)).toEqual(g.tolerationsDropped);
      if (g.ours.kind === 'Deployment') expect(mine).toEqual(expect.arrayContaining(CP_TOLERATIONS));
    });

    it.skipIf(g.roleFile === null)(
      'grants the ClusterRole rules upstream grants, no fewer and no more',
      () => {
        const role = g.role ?? 'system:cloud-controller-manager';
        const upstreamRole = find(upstreamObjects(g.roleFile ?? g.upstream.file), 'ClusterRole', role);
        expect(ruleAtoms(find(rendered(g), 'ClusterRole', role))).toEqual(ruleAtoms(upstreamRole));
      },
    );
  },
);

describe('the golden comparison itself', () => {
  it('notices a drifted flag, repository, toleration or rule', () => {
    const g = GOLDEN[0] as Golden;
    const ours = find(rendered(g), 'Deployment', 'cloud-controller-manager');
    const c = container(ours, 'cloud-controller-manager');
    const drifted = flagDiff(flagsOf({ ...c, args: [...(c.args ?? []), '--v=6'] }), flagsOf(c));
    expect(drifted.changed).toEqual({ v: '6' });
    expect(repository('mcr.microsoft.com/oss/v2/kubernetes/x:v1.32.1')).not.toBe(repository(c.image ?? ''));
    const role = find(rendered(g), 'ClusterRole', 'system:cloud-controller-manager');
    const fewer = { ...role, rules: ((role as { rules?: unknown[] }).rules ?? []).slice(1) } as KubeObject;
    expect(difference(ruleAtoms(role), ruleAtoms(fewer))).toEqual([
      'core events create',
      'core events patch',
      'core events update',
    ]);
  });
});
