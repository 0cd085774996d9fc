/**
 * A CCM whose cloud config (on its node) reads credentials from a Secret: that Secret mounted read-only
 * beside the config, never copied into an object of ours.
 */
import type { V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.ts';
import { type RenderInput, renderCcmObjects } from '../../lib/providers/render.ts';

const OPENSTACK: RenderInput = {
  provider: 'openstack',
  kubernetesVersion: 'v1.25.16',
  clusterName: 'kubernetes',
  replicas: 1,
  cloudConfigHostPath: '/etc/kubernetes/cloud.conf.external',
  credentialsSecret: { name: 'openstack-credentials', mountPath: '/etc/openstack/secret' },
};

describe('renderCcmObjects with a credentials Secret', () => {
  it('mounts the host config and the Secret read-only, and renders no Secret of its own', () => {
    const objects = renderCcmObjects(OPENSTACK);
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    const pod = (objects.find((o) => o.kind === 'Deployment') as unknown as V1Deployment).spec?.template.spec;
    const container = pod?.containers.find((c) => c.name === 'cloud-controller-manager');
    expect(container?.args).toContain('--cloud-config=/etc/kubernetes/cloud.conf.external');
    expect(pod?.volumes).toEqual(
      expect.arrayContaining([
        { name: 'cloud-config', hostPath: { path: '/etc/kubernetes/cloud.conf.external', type: 'File' } },
        { name: 'cloud-credentials', secret: { secretName: 'openstack-credentials' } },
      ]),
    );
    expect(container?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'cloud-config', mountPath: '/etc/kubernetes/cloud.conf.external', readOnly: true },
        { name: 'cloud-credentials', mountPath: '/etc/openstack/secret', readOnly: true },
      ]),
    );
  });

  it('refuses a credentials Secret without a cloud config on the host to read it', () => {
    const { cloudConfigHostPath: _, ...withoutPath } = OPENSTACK;
    expect(() => renderCcmObjects({ ...withoutPath, cloudConfig: '[Global]\n' })).toThrow(InvalidInputError);
  });
});
