/**
 * `--image <container>=<image>`, repeatable, on `upgrade` and `plan`: the CCM's image overrides, checked as
 * each flag is parsed (a bad one is exit 2 before anything reaches a cluster).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { PROVIDERS } from '../providers/catalog.ts';
import {
  type ImageOverrides,
  ImageReferenceSchema,
  OVERRIDABLE_CONTAINERS,
  overridableContainers,
  parseImageReference,
} from '../providers/image-overrides.ts';

const EXAMPLE = 'cloud-controller-manager=mirror.example.com/provider-aws/cloud-controller-manager:v1.26.6';

/** One `--image` value added to those before it (commander's argument parser). */
export function collectImage(value: string, previous: ImageOverrides = {}): ImageOverrides {
  const eq = value.indexOf('=');
  const container = value.slice(0, eq).trim();
  const image = value.slice(eq + 1).trim();
  if (eq < 0 || !container || !image) {
    throw new InvalidArgumentError(`expected <container>=<image>, e.g. ${EXAMPLE}`);
  }
  if (!OVERRIDABLE_CONTAINERS.includes(container)) {
    throw new InvalidArgumentError(
      `${JSON.stringify(container)} is not a container ccm-migrate sets the image of (${OVERRIDABLE_CONTAINERS.join(', ')})`,
    );
  }
  const parsed = ImageReferenceSchema.safeParse(image);
  if (!parsed.success) {
    throw new InvalidArgumentError(parsed.error.issues.map((i) => i.message).join('; '));
  }
  const before = previous[container];
  if (before !== undefined && before !== image) {
    throw new InvalidArgumentError(`${container} is given two images: ${before} and ${image}`);
  }
  return { ...previous, [container]: image };
}

/**
 * `--agent-image`: any image reference; a tag without a digest is allowed (a mirror may retag), and the plan
 * says it is not pinned.
 */
export function parseAgentImage(value: string): string {
  if (!parseImageReference(value)) {
    throw new InvalidArgumentError(
      `${JSON.stringify(value)} is not an image reference ([registry[:port]/]repository[:tag][@digest])`,
    );
  }
  return value;
}

/** `cloud-controller-manager, cloud-node-manager (azure)`: each container, and its providers unless all. */
function containersHelp(): string {
  return OVERRIDABLE_CONTAINERS.map((c) => {
    const providers = PROVIDERS.filter((p) => overridableContainers(p).includes(c));
    return providers.length === PROVIDERS.length ? c : `${c} (${providers.join(', ')})`;
  }).join(', ');
}

export function imageOption(command: Command): Command {
  return command.option(
    '--image <container=image>',
    `run this image in a CCM container instead of the catalog's (a mirrored registry); repeatable. Containers: ${containersHelp()}`,
    collectImage,
  );
}
