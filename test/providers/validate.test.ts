/**
 * Rendered objects against the Kubernetes OpenAPI schemas (kube-object-schemas.ts): everything the
 * catalog renders passes, for every provider and minor; a broken object is refused naming the field,
 * never the value.
 */
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.ts';
import { knownFacts, PROVIDERS } from '../../lib/providers/catalog.ts';
import { CCM_WORKLOADS } from '../../lib/providers/ccm-workload.ts';
import { type KubeObject, renderCcmObjects } from '../../lib/providers/render.ts';
import { validateKubeObjects } from './kube-object-schemas.ts';

describe('rendered objects and the OpenAPI schemas', () => {
  it('every provider renders valid objects at every minor it has an image for, as either workload, staged or not', () => {
    let checked = 0;
    for (const provider of PROVIDERS) {
      const facts = knownFacts(provider);
      for (const minor of Object.keys(facts.ccmImages)) {
        for (const workload of CCM_WORKLOADS) {
          for (const replicas of [0, 2]) {
            const objects = renderCcmObjects({
              provider,
              kubernetesVersion: `v1.${minor}.3`,
              clusterName: 'prod',
              replicas,
              workload,
              cloudConfig: '[Global]\nregion = eu-west-1\n',
            });
            expect(() => validateKubeObjects(objects)).not.toThrow();
            checked += objects.length;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(200);
  });

  it('objects rendered from a host-path cloud config with a credentials Secret, and image overrides, are valid', () => {
    const objects = renderCcmObjects({
      provider: 'openstack',
      kubernetesVersion: 'v1.30.2',
      clusterName: 'prod',
      replicas: 2,
      cloudConfigHostPath: '/etc/kubernetes/cloud.conf',
      credentialsSecret: { name: 'openstack-clouds', mountPath: '/etc/openstack' },
      images: { 'cloud-controller-manager': 'mirror.example/occm:v1.30.2' },
    });
    expect(() => validateKubeObjects(objects)).not.toThrow();
  });

  const deployment = (): KubeObject =>
    structuredClone(
      renderCcmObjects({ provider: 'aws', kubernetesVersion: 'v1.30.0', clusterName: 'k', replicas: 2 }).find(
        (o) => o.kind === 'Deployment',
      ) as KubeObject,
    );
  type Loose = {
    spec: { selector?: unknown; replicas?: unknown; template: { spec: { containers: Loose[] } } };
  } & Record<string, unknown>;

  it.each([
    ['no selector', (d: Loose) => delete d.spec.selector, /\/spec must have required property .?selector/],
    ['replicas as a string', (d: Loose) => (d.spec.replicas = '2'), /\/spec\/replicas must be integer/],
    [
      'a container port as a string',
      (d: Loose) =>
        ((d.spec.template.spec.containers[0] as Record<string, unknown>).ports = [
          { containerPort: '10258' },
        ]),
      /\/spec\/template\/spec\/containers\/0\/ports\/0\/containerPort must be integer/,
    ],
  ])('refuses a Deployment with %s, naming the object and the field', (_what, breakIt, message) => {
    const broken = deployment();
    breakIt(broken as unknown as Loose);
    const refused = (() => {
      try {
        validateKubeObjects([broken]);
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as Error).message).toMatch(
      /^rendered objects the Kubernetes v1\.36\.0 OpenAPI schema refuses: Deployment kube-system\/aws-cloud-controller-manager: /,
    );
    expect((refused as Error).message).toMatch(message);
  });

  it('names the field of a Secret it refuses, never its value', () => {
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cloud-config', namespace: 'kube-system' },
      data: { 'cloud.conf': 'password=hunter2 not base64!' },
    };
    expect(() => validateKubeObjects([secret])).toThrow(
      /Secret kube-system\/cloud-config: \/data\/cloud\.conf must match format "byte"/,
    );
    expect(() => validateKubeObjects([secret])).not.toThrow(/hunter2/);
  });

  it('cannot see an unknown field (the schemas allow extra fields): the API server refuses those', () => {
    const d = deployment() as unknown as Loose;
    (d.spec.template.spec.containers[0] as Record<string, unknown>).imagePullPolicyy = 'Always';
    expect(() => validateKubeObjects([d as unknown as KubeObject])).not.toThrow();
  });
});
