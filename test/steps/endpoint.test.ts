/** Telling a pinned API endpoint: which control-plane node, if exactly one, carries the server's host. */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ADVERTISE_ADDRESS_ANNOTATION, pinnedNodeOf, restartOrder } from '../../lib/steps/endpoint.ts';

function node(name: string, addresses: [type: string, address: string][]): V1Node {
  return {
    metadata: { name, labels: { 'node-role.kubernetes.io/control-plane': '' } },
    status: { addresses: addresses.map(([type, address]) => ({ type, address })) },
  };
}

function apiServer(nodeName: string, opts: { endpoint?: string; advertise?: string }): V1Pod {
  return {
    metadata: {
      name: `kube-apiserver-${nodeName}`,
      labels: { component: 'kube-apiserver' },
      annotations: opts.endpoint ? { [ADVERTISE_ADDRESS_ANNOTATION]: opts.endpoint } : {},
    },
    spec: {
      nodeName,
      containers: [
        {
          name: 'kube-apiserver',
          command: ['kube-apiserver', ...(opts.advertise ? [`--advertise-address=${opts.advertise}`] : [])],
        },
      ],
    },
  };
}

const NODES = [
  node('cp-1', [
    ['InternalIP', '10.0.0.11'],
    ['Hostname', 'ip-10-0-0-11'],
  ]),
  node('cp-2', [['InternalIP', '10.0.0.12']]),
];

describe('pinnedNodeOf', () => {
  it('matches a node address of any type, case-insensitively', () => {
    expect(pinnedNodeOf('https://10.0.0.12:6443', NODES, [])).toEqual({
      node: 'cp-2',
      host: '10.0.0.12',
      by: 'InternalIP',
    });
    expect(pinnedNodeOf('https://IP-10-0-0-11:6443', NODES, [])?.node).toBe('cp-1');
  });

  it('matches the kube-apiserver’s advertised address: kubeadm’s annotation, or its flag', () => {
    const pods = [
      apiServer('cp-1', { endpoint: '192.168.1.11:6443' }),
      apiServer('cp-2', { advertise: 'fd00::12' }),
    ];
    expect(pinnedNodeOf('https://192.168.1.11:6443', NODES, pods)).toEqual({
      node: 'cp-1',
      host: '192.168.1.11',
      by: 'kube-apiserver advertise address',
    });
    expect(pinnedNodeOf('https://[fd00::12]:6443', NODES, pods)).toEqual({
      node: 'cp-2',
      host: 'fd00::12',
      by: 'kube-apiserver --advertise-address',
    });
  });

  it('reads no flag of a pod whose kube-apiserver container it cannot tell, and still matches its node', () => {
    const pod = apiServer('cp-1', { advertise: '192.168.1.11' });
    const sidecars = {
      ...pod,
      spec: { nodeName: 'cp-1', containers: [{ name: 'proxy' }, { name: 'kms', command: ['kms'] }] },
    };
    expect(pinnedNodeOf('https://192.168.1.11:6443', NODES, [sidecars])).toBeUndefined();
    expect(pinnedNodeOf('https://10.0.0.11:6443', NODES, [sidecars])?.node).toBe('cp-1');
  });

  it('cannot tell a load balancer, a name no node carries, two nodes with the address, or no URL', () => {
    expect(pinnedNodeOf('https://api.example.com:6443', NODES, [])).toBeUndefined();
    expect(pinnedNodeOf('https://10.0.0.100:6443', NODES, [])).toBeUndefined();
    const twins = [node('a', [['InternalIP', '10.0.0.5']]), node('b', [['InternalIP', '10.0.0.5']])];
    expect(pinnedNodeOf('https://10.0.0.5:6443', twins, [])).toBeUndefined();
    expect(pinnedNodeOf('not a url', NODES, [])).toBeUndefined();
  });
});

describe('restartOrder', () => {
  it('puts the pinned node last and leaves the others in order; unpinned, the order stays', () => {
    const pinned = { node: 'cp-1', host: '10.0.0.11', by: 'InternalIP' };
    expect(restartOrder(['cp-1', 'cp-2', 'cp-3'], pinned)).toEqual(['cp-2', 'cp-3', 'cp-1']);
    expect(restartOrder(['cp-1', 'cp-2', 'cp-3'], undefined)).toEqual(['cp-1', 'cp-2', 'cp-3']);
  });
});
