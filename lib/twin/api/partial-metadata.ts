/**
 * Metadata-only reads, as the API server serves them (k8s.io/apiserver/pkg/endpoints/handlers/response.go):
 * a GET whose Accept asks `application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` gets the object's
 * metadata and nothing else (no spec, status or a Secret's data), a list asked
 * `as=PartialObjectMetadataList` one such item per object. A client may thus learn that a Secret exists
 * without receiving its credentials. See
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-partial-object-metadata
 */
import { StatusError } from '../errors.ts';
import type { KubeObject } from '../store.ts';

/** A metadata-only rendering of a GET: the kind answered, in meta.k8s.io `version`. */
export interface PartialRendering {
  readonly kind: 'PartialObjectMetadata' | 'PartialObjectMetadataList';
  readonly version: string;
}

/** The versions of meta.k8s.io the API server serves PartialObjectMetadata in. */
const META_VERSIONS = new Set(['v1', 'v1beta1']);

function notAcceptable(): StatusError {
  return new StatusError(
    'NotAcceptable',
    'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf',
  );
}

function parametersOf(parts: readonly string[]): Map<string, string> {
  return new Map(
    parts.map((p) => {
      const at = p.indexOf('=');
      return at < 0 ? [p, ''] : [p.slice(0, at).trim(), p.slice(at + 1).trim()];
    }),
  );
}

/**
 * What an Accept header asks of a GET of one object or of a list: its first media range the server can
 * serve there (clients list them in preference order). A range without `as` is the plain object
 * (undefined), as before; one asking a rendering the target does not have (a list's for an object, a
 * Table) is passed over, and a header with nothing servable is refused, 406.
 */
export function partialRenderingFor(
  accept: string | undefined,
  target: 'object' | 'list',
): PartialRendering | undefined {
  if (!accept?.trim()) return undefined;
  const kind = target === 'object' ? 'PartialObjectMetadata' : 'PartialObjectMetadataList';
  for (const range of accept.split(',')) {
    const [mediaType = '', ...rest] = range.split(';').map((p) => p.trim());
    const params = parametersOf(rest);
    const as = params.get('as');
    if (as === undefined) return undefined;
    const version = params.get('v') ?? '';
    if (
      as === kind &&
      params.get('g') === 'meta.k8s.io' &&
      META_VERSIONS.has(version) &&
      ['application/json', 'application/*', '*/*'].includes(mediaType.toLowerCase())
    ) {
      return { kind, version };
    }
  }
  throw notAcceptable();
}

/** The Content-Type the API server answers a rendering with. */
export function contentTypeOf(rendering: PartialRendering): string {
  return `application/json;as=${rendering.kind};g=meta.k8s.io;v=${rendering.version}`;
}

/** One object's PartialObjectMetadata: its whole metadata, as meta.AsPartialObjectMetadata copies it. */
export function partialObjectMetadata(obj: KubeObject, version: string): object {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata };
}

/** A list's PartialObjectMetadataList: the list's own metadata (resourceVersion, continue) kept. */
export function partialObjectMetadataList(
  list: { readonly metadata: object; readonly items: readonly KubeObject[] },
  version: string,
): object {
  return {
    kind: 'PartialObjectMetadataList',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: list.metadata,
    items: list.items.map((obj) => partialObjectMetadata(obj, version)),
  };
}
