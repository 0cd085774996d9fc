/** Kubernetes-shaped objects for the patch tests, deep-frozen as the store hands them out. */
import type { KubeObject } from '../../lib/twin/store.ts';

export function frozen<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) frozen(child);
    Object.freeze(value);
  }
  return value;
}

export function deployment(): KubeObject {
  return frozen({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'default',
      uid: '5c1c2d0e-0000-4000-8000-000000000001',
      resourceVersion: '42',
      generation: 1,
      creationTimestamp: '2024-05-01T10:00:00Z',
      labels: { app: 'web' },
      finalizers: ['example.com/a'],
    },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'nginx',
              image: 'nginx:1.25',
              ports: [{ containerPort: 80, protocol: 'TCP' }],
              env: [
                { name: 'A', value: '1' },
                { name: 'B', value: '2' },
              ],
              volumeMounts: [{ name: 'conf', mountPath: '/etc/nginx' }],
            },
            { name: 'sidecar', image: 'busybox:1.36', args: ['sleep', '3600'] },
          ],
          volumes: [{ name: 'conf', configMap: { name: 'web-conf' } }],
          tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
        },
      },
    },
    status: { replicas: 2, conditions: [{ type: 'Available', status: 'True' }] },
  });
}

export function node(): KubeObject {
  return frozen({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'worker-1',
      uid: 'node-uid-1',
      resourceVersion: '7',
      labels: { 'kubernetes.io/os': 'linux' },
    },
    spec: {
      podCIDRs: ['10.244.1.0/24'],
      taints: [
        { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
      ],
    },
    status: {
      conditions: [
        { type: 'MemoryPressure', status: 'False' },
        { type: 'Ready', status: 'False', reason: 'KubeletNotReady' },
      ],
      addresses: [
        { type: 'InternalIP', address: '10.0.1.10' },
        { type: 'Hostname', address: 'worker-1' },
      ],
    },
  });
}

export function pod(): KubeObject {
  return frozen({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'agent-x',
      namespace: 'kube-system',
      uid: 'pod-uid-1',
      resourceVersion: '9',
      ownerReferences: [
        { apiVersion: 'batch/v1', kind: 'Job', name: 'agent', uid: 'job-uid-1', controller: true },
      ],
    },
    spec: {
      nodeName: 'cp-1',
      containers: [{ name: 'agent', image: 'node:22', volumeMounts: [{ name: 'host', mountPath: '/host' }] }],
      volumes: [{ name: 'host', hostPath: { path: '/' } }],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  });
}
