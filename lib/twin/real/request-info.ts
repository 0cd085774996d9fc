/**
 * A request's resource attributes as kube-apiserver's RequestInfoFactory derives them
 * (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), for any path, served by the twin or not: what
 * the proxy before a real server counts and injects faults by.
 */
import { type ResourceAccess, requestedName } from '../api/front-door.ts';
import type { ApiVerb } from '../api/route.ts';

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

export interface RequestInfo {
  readonly access: ResourceAccess;
  readonly version: string;
  /** The object named in the path, for a request on one object. */
  readonly name: string | undefined;
}

/** Undefined for a request that is not for a resource (discovery, /version, health, OpenAPI). */
export function requestInfo(method: string, url: URL): RequestInfo | undefined {
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  let rest: string[];
  let group: string;
  let version: string;
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    version = parts[1] as string;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1] as string;
    version = parts[2] as string;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  // As requestinfo.go: `/namespaces/<ns>` names the namespace too; `status` and `finalize` are its own
  // subresources, anything else after it is a resource in that namespace.
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1];
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2] as string)) rest = rest.slice(2);
  }
  const [plural, name, subresource] = rest as [string, string?, string?];
  const resource = subresource ? `${plural}/${subresource}` : plural;
  let verb: ApiVerb;
  switch (method) {
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name === undefined ? 'deletecollection' : 'delete';
      break;
    default:
      verb = name !== undefined ? 'get' : TRUE.has(url.searchParams.get('watch') ?? '') ? 'watch' : 'list';
  }
  const access = { verb, group, resource, namespace, name: requestedName(verb, name, url.searchParams) };
  return { access, version, name };
}
