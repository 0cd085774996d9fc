/**
 * Image overrides: a CCM container runs the image the operator names instead of the catalog's (a mirrored
 * registry in an air-gapped cluster). An override names a container the provider's CCM manifests have
 * (`cloud-controller-manager`, and Azure's `cloud-node-manager`) and an image reference with a tag or a
 * digest; both are checked before anything reaches a cluster.
 */
import * as z from 'zod';
import { InvalidInputError } from '../errors.ts';
import { knownFacts, PROVIDERS, type ProviderId } from './catalog.ts';

/** The containers render sets the image on: the CCM's, and its node manager's where there is one. */
export function overridableContainers(provider: ProviderId): string[] {
  const facts = knownFacts(provider);
  return [facts.containerName, ...(facts.nodeManager ? [facts.nodeManager.containerName] : [])];
}

/** Every provider's: what can be checked before the cluster's provider is known (flags, events). */
export const OVERRIDABLE_CONTAINERS: readonly string[] = [
  ...new Set(PROVIDERS.flatMap(overridableContainers)),
];

// The reference grammar of github.com/distribution/reference (regexp.go), which containerd and the kubelet
// parse image names with: [host[:port]/]path[:tag][@digest], path components lower-case.
const ALPHANUMERIC = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const PATH_COMPONENT = `${ALPHANUMERIC}(?:${SEPARATOR}${ALPHANUMERIC})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])`;
const NAME = `(?:${HOST}(?::[0-9]+)?/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(${NAME})(?::(${TAG}))?(?:@(${DIGEST}))?$`);
/** distribution's NameTotalLengthMax; with a tag and a digest a reference stays well under 512. */
const NAME_MAX = 255;
const REFERENCE_MAX = 512;

export interface ImageReference {
  readonly name: string;
  readonly tag?: string;
  readonly digest?: string;
}

/** The parts of an image reference, or undefined when it does not parse. */
export function parseImageReference(ref: string): ImageReference | undefined {
  if (ref.length > REFERENCE_MAX) return undefined;
  const m = REFERENCE.exec(ref);
  if (!m?.[1] || m[1].length > NAME_MAX) return undefined;
  return { name: m[1], ...(m[2] ? { tag: m[2] } : {}), ...(m[3] ? { digest: m[3] } : {}) };
}

/**
 * An image reference pinned by a tag or a digest: without either the kubelet pulls `:latest`, whose
 * Kubernetes minor nobody can tell (a CCM must not be newer than the cluster).
 */
export const ImageReferenceSchema = z.string().superRefine((ref, ctx) => {
  const parsed = parseImageReference(ref);
  if (!parsed) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(ref)} is not an image reference ([registry[:port]/]repository[:tag][@digest], the repository lower-case)`,
    });
  } else if (parsed.tag === undefined && parsed.digest === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(ref)} names no tag or digest: it would run :latest, of no known Kubernetes minor`,
    });
  }
});

const UNKNOWN_CONTAINER = `not a container ccm-migrate sets the image of (${OVERRIDABLE_CONTAINERS.join(', ')})`;

/** Images by container name, instead of the catalog's. */
export const ImageOverridesSchema = z.record(
  z.string().refine((name) => OVERRIDABLE_CONTAINERS.includes(name)),
  ImageReferenceSchema,
  // zod's own words for a bad key are "Invalid key in record".
  { error: (issue) => (issue.code === 'invalid_key' ? UNKNOWN_CONTAINER : undefined) },
);
export type ImageOverrides = z.infer<typeof ImageOverridesSchema>;

/** InvalidInputError when an override names a container the provider's CCM does not have. */
export function checkImageOverrides(provider: ProviderId, images: ImageOverrides | undefined): void {
  const containers = overridableContainers(provider);
  const unknown = Object.keys(images ?? {}).filter((name) => !containers.includes(name));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `an image override names ${unknown.map((n) => JSON.stringify(n)).join(', ')}, which the ${knownFacts(provider).displayName} cloud-controller-manager does not have (its containers: ${containers.join(', ')})`,
    );
  }
}

/** The image a CCM container runs, and whether the operator's override chose it. */
export interface ContainerImage {
  readonly container: string;
  readonly image: string;
  readonly override: boolean;
}

interface Workload {
  readonly kind?: string;
  readonly spec?: { template?: { spec?: { containers?: readonly { name: string; image?: string }[] } } };
}

/** The images the rendered CCM objects run, per overridable container, in manifest order. */
export function renderedImages(
  objects: readonly Workload[],
  overrides: ImageOverrides | undefined,
): ContainerImage[] {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet')
    .flatMap((o) => o.spec?.template?.spec?.containers ?? [])
    .filter((c) => OVERRIDABLE_CONTAINERS.includes(c.name))
    .map((c) => ({ container: c.name, image: c.image ?? '', override: overrides?.[c.name] !== undefined }));
}

/** `cloud-controller-manager mirror.example/ccm:v1.26.6 (override)`: for the plan and the progress output. */
export function describeImage(i: ContainerImage): string {
  return `${i.container} ${i.image}${i.override ? ' (override)' : ''}`;
}
