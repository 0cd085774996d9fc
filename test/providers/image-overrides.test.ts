/**
 * Image overrides: image references parsed by distribution's grammar (every catalog image among them), the
 * overrides' schema with its messages, which containers each provider lets an override name, and the
 * images the rendered objects run.
 */
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.ts';
import { knownFacts, PROVIDERS } from '../../lib/providers/catalog.ts';
import {
  checkImageOverrides,
  describeImage,
  ImageOverridesSchema,
  OVERRIDABLE_CONTAINERS,
  overridableContainers,
  parseImageReference,
  renderedImages,
} from '../../lib/providers/image-overrides.ts';
import { renderCcmObjects } from '../../lib/providers/render.ts';
import { parseInput } from '../../lib/store/run-record.ts';

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

describe('parseImageReference', () => {
  it.each([
    [
      'registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.6',
      { name: 'registry.k8s.io/provider-aws/cloud-controller-manager', tag: 'v1.26.6' },
    ],
    [`mirror.local:5000/ccm@${DIGEST}`, { name: 'mirror.local:5000/ccm', digest: DIGEST }],
    [`mirror.local/ccm:v1.29.0@${DIGEST}`, { name: 'mirror.local/ccm', tag: 'v1.29.0', digest: DIGEST }],
    ['[fd00::1]:5000/team/ccm:v1', { name: '[fd00::1]:5000/team/ccm', tag: 'v1' }],
    ['localhost/a__b/c-d.e_f:1.0_rc-1', { name: 'localhost/a__b/c-d.e_f', tag: '1.0_rc-1' }],
    ['ccm', { name: 'ccm' }],
  ])('parses %s', (ref, parts) => {
    expect(parseImageReference(ref)).toEqual(parts);
  });

  it.each([
    ['an empty string', ''],
    ['a space', 'mirror.local/ccm :v1'],
    ['an upper-case repository', 'mirror.local/Team/ccm:v1'],
    ['an empty tag', 'mirror.local/ccm:'],
    ['a tag of 129 characters', `mirror.local/ccm:${'v'.repeat(129)}`],
    ['a short digest', 'mirror.local/ccm@sha256:abc'],
    ['a scheme', 'https://mirror.local/ccm:v1'],
    ['a name over 255 characters', `mirror.local/${'a'.repeat(250)}:v1`],
    ['a leading separator', 'mirror.local/-ccm:v1'],
  ])('refuses %s', (_what, ref) => {
    expect(parseImageReference(ref)).toBeUndefined();
  });

  it('answers a long hostile string at once (no backtracking blow-up)', () => {
    const started = performance.now();
    for (const ref of [
      'a'.repeat(500),
      `${'a-'.repeat(250)}!`,
      `${'a.'.repeat(250)}/!`,
      `${'a/'.repeat(250)}:`,
    ]) {
      expect(parseImageReference(`${ref}!`)).toBeUndefined();
    }
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('parses every image of the catalog, each with a tag', () => {
    for (const p of PROVIDERS) {
      const facts = knownFacts(p);
      for (const image of [
        ...Object.values(facts.ccmImages),
        ...Object.values(facts.nodeManager?.images ?? {}),
      ]) {
        expect(parseImageReference(image)?.tag, image).toBeDefined();
      }
    }
  });
});

describe('ImageOverridesSchema', () => {
  const parse = (value: unknown) => parseInput(ImageOverridesSchema, value, 'image overrides');

  it('takes images of the containers ccm-migrate renders', () => {
    const images = {
      'cloud-controller-manager': 'mirror.local/ccm:v1.29.0',
      'cloud-node-manager': `mirror.local/cnm@${DIGEST}`,
    };
    expect(parse(images)).toEqual(images);
    expect(OVERRIDABLE_CONTAINERS).toEqual(['cloud-controller-manager', 'cloud-node-manager']);
  });

  it('names what is wrong: an unknown container, an image that does not parse, an image without tag or digest', () => {
    expect(() => parse({ ccm: 'mirror.local/ccm:v1' })).toThrow(
      'invalid image overrides: ccm: not a container ccm-migrate sets the image of (cloud-controller-manager, cloud-node-manager)',
    );
    expect(() => parse({ 'cloud-controller-manager': 'Mirror Local/ccm' })).toThrow(
      'cloud-controller-manager: "Mirror Local/ccm" is not an image reference',
    );
    expect(() => parse({ 'cloud-controller-manager': 'mirror.local/ccm' })).toThrow(
      'cloud-controller-manager: "mirror.local/ccm" names no tag or digest',
    );
  });
});

describe('checkImageOverrides', () => {
  it('lets each provider override its CCM, and Azure its cloud-node-manager too', () => {
    for (const p of PROVIDERS) {
      expect(overridableContainers(p)).toEqual(
        p === 'azure' ? ['cloud-controller-manager', 'cloud-node-manager'] : ['cloud-controller-manager'],
      );
    }
    expect(() =>
      checkImageOverrides('azure', { 'cloud-node-manager': 'mirror.local/cnm:v1.29.0' }),
    ).not.toThrow();
    expect(() => checkImageOverrides('aws', undefined)).not.toThrow();
  });

  it('refuses, as bad input, a container the provider has not', () => {
    const check = () => checkImageOverrides('gcp', { 'cloud-node-manager': 'mirror.local/cnm:v1.29.0' });
    expect(check).toThrow(InvalidInputError);
    expect(check).toThrow(
      'an image override names "cloud-node-manager", which the Google Cloud cloud-controller-manager does not have (its containers: cloud-controller-manager)',
    );
  });
});

describe('renderedImages', () => {
  it('gives the image of each CCM container the objects run, marking the overridden one', () => {
    const images = { 'cloud-node-manager': 'mirror.local/cnm:v1.29.0' };
    const objects = renderCcmObjects({
      provider: 'azure',
      kubernetesVersion: 'v1.29.4',
      clusterName: 'k',
      replicas: 1,
      cloudConfigHostPath: '/etc/kubernetes/azure.json',
      images,
    });
    const rendered = renderedImages(objects as never, images);
    const catalog = knownFacts('azure').ccmImages[29];
    expect(rendered).toEqual([
      { container: 'cloud-controller-manager', image: catalog, override: false },
      { container: 'cloud-node-manager', image: 'mirror.local/cnm:v1.29.0', override: true },
    ]);
    expect(rendered.map(describeImage)).toEqual([
      `cloud-controller-manager ${catalog}`,
      'cloud-node-manager mirror.local/cnm:v1.29.0 (override)',
    ]);
  });
});
