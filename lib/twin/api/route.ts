/**
 * From a request's method and path to what it asks for: a discovery document, a health check, or a verb on
 * a resource (`/api/v1[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]`, and the same under
 * `/apis/<group>/<version>`), with the real server's 404 and 405 answers for everything else.
 */
import { StatusError } from '../errors.ts';
import { findByPlural, RESOURCE_TYPES, type ResourceType } from '../resources.ts';
import { ACCESS_REVIEW } from './access-review.ts';

/** Verbs as the API server's audit and metrics name them. */
export type ApiVerb =
  | 'get'
  | 'list'
  | 'watch'
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'deletecollection';

export interface ResourceRoute {
  readonly kind: 'resource';
  readonly verb: ApiVerb;
  readonly type: ResourceType;
  /** Set for namespaced paths; undefined for cluster-scoped types and all-namespace lists. */
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: 'status' | 'scale' | undefined;
}

export type Route =
  | { readonly kind: 'health' }
  | { readonly kind: 'version' }
  | { readonly kind: 'apiVersions' }
  | { readonly kind: 'apiGroups' }
  | { readonly kind: 'resourceList'; readonly group: string; readonly version: string }
  | { readonly kind: 'openapiRoot' }
  /** `gv` is `api/v1` or `apis/<group>/<version>`. */
  | { readonly kind: 'openapiDocument'; readonly gv: string }
  | ResourceRoute;

/** The real server's answer to a path it does not serve. */
export function pathNotFound(): StatusError {
  return new StatusError('NotFound', 'the server could not find the requested resource', {});
}

function methodNotAllowed(): StatusError {
  return new StatusError(
    'MethodNotAllowed',
    'the server does not allow this method on the requested resource',
    {},
  );
}

const HEALTH = /^\/(healthz|livez|readyz)(\/.*)?$/;

export function parseRoute(method: string, pathname: string, query: URLSearchParams): Route {
  const segments = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (HEALTH.test(pathname)) return readOnly(method, { kind: 'health' });
  if (pathname === '/version' || pathname === '/version/') return readOnly(method, { kind: 'version' });
  if (segments[0] === 'openapi' && segments[1] === 'v3') {
    if (segments.length === 2) return readOnly(method, { kind: 'openapiRoot' });
    return readOnly(method, { kind: 'openapiDocument', gv: segments.slice(2).join('/') });
  }
  if (segments[0] === 'api') {
    if (segments.length === 1) return readOnly(method, { kind: 'apiVersions' });
    if (segments[1] !== 'v1') throw pathNotFound();
    return resourcePath(method, '', 'v1', segments.slice(2), query);
  }
  if (segments[0] === 'apis') {
    if (segments.length === 1) return readOnly(method, { kind: 'apiGroups' });
    const [group, version] = [segments[1] as string, segments[2]];
    if (!version) throw pathNotFound();
    return resourcePath(method, group, version, segments.slice(3), query);
  }
  throw pathNotFound();
}

function readOnly<T extends Route>(method: string, route: T): T {
  if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed();
  return route;
}

function resourcePath(
  method: string,
  group: string,
  version: string,
  rest: string[],
  query: URLSearchParams,
): Route {
  if (rest.length === 0) {
    if (!servesGroupVersion(group, version)) throw pathNotFound();
    return readOnly(method, { kind: 'resourceList', group, version });
  }
  let namespace: string | undefined;
  // `/namespaces/<ns>/<plural>…` is a namespaced path; `/namespaces/<name>[/status]` is a Namespace itself.
  if (
    rest[0] === 'namespaces' &&
    rest.length >= 3 &&
    findByPlural(group, version, rest[2] as string)?.namespaced
  ) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [plural, name, subresource, ...extra] = rest as [string, string?, string?, ...string[]];
  const type = findByPlural(group, version, plural);
  if (!type || extra.length > 0) throw pathNotFound();
  if (subresource !== undefined && !type.subresources.includes(subresource)) throw pathNotFound();
  // A namespaced object is only addressed inside its namespace; `/api/v1/pods` lists across namespaces.
  if (name !== undefined && type.namespaced && namespace === undefined) throw pathNotFound();
  const route = {
    kind: 'resource' as const,
    type,
    namespace,
    name,
    subresource: subresource as 'status' | 'scale' | undefined,
  };
  return { ...route, verb: verbOf(method, route, query) };
}

function servesGroupVersion(group: string, version: string): boolean {
  return group === '' ? version === 'v1' : RESOURCE_GROUP_VERSIONS.has(`${group}/${version}`);
}

const RESOURCE_GROUP_VERSIONS = new Set([
  ...RESOURCE_TYPES.map((t) => `${t.group}/${t.version}`),
  `${ACCESS_REVIEW.group}/${ACCESS_REVIEW.version}`,
]);

function verbOf(
  method: string,
  route: {
    type: ResourceType;
    namespace: string | undefined;
    name: string | undefined;
    subresource: string | undefined;
  },
  query: URLSearchParams,
): ApiVerb {
  if (route.subresource) {
    if (method === 'GET' || method === 'HEAD') return 'get';
    if (method === 'PUT') return 'update';
    if (method === 'PATCH') return 'patch';
    throw methodNotAllowed();
  }
  if (route.name !== undefined) {
    if (method === 'GET' || method === 'HEAD') return 'get';
    if (method === 'PUT') return 'update';
    if (method === 'PATCH') return 'patch';
    if (method === 'DELETE') return 'delete';
    throw methodNotAllowed();
  }
  if (method === 'GET' || method === 'HEAD') return isWatch(query) ? 'watch' : 'list';
  // The all-namespaces path of a namespaced type serves list and watch only, as the real one does.
  const collectionWritable = !route.type.namespaced || route.namespace !== undefined;
  if (method === 'POST' && collectionWritable) return 'create';
  if (method === 'DELETE' && collectionWritable) return 'deletecollection';
  throw methodNotAllowed();
}

/** `watch=true` or `watch=1` (the query parameter is a bool parsed like Go's strconv.ParseBool). */
function isWatch(query: URLSearchParams): boolean {
  const w = query.get('watch');
  return w !== null && ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(w);
}
