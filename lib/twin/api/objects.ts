/**
 * Checks a written object must pass before it reaches the store, with the real handlers' messages
 * (k8s.io/apiserver/pkg/endpoints/handlers create.go, update.go, rest.go; pkg/registry/rest/meta.go).
 */
import { badRequest } from '../errors.ts';
import { apiVersionOf, type ResourceType } from '../resources.ts';
import type { KubeObject, ObjectMeta } from '../store.ts';

/**
 * The body as an object of `type`: apiVersion and kind default to the URL's (as the decoder's default
 * GVK does) and must match it when given.
 */
export function asObjectOf(type: ResourceType, body: Record<string, unknown>): KubeObject {
  const expected = apiVersionOf(type);
  const apiVersion = body.apiVersion ?? expected;
  const kind = body.kind ?? type.kind;
  if (apiVersion !== expected) {
    throw badRequest(
      `the API version in the data (${String(apiVersion)}) does not match the expected API version (${expected})`,
    );
  }
  if (kind !== type.kind) {
    throw badRequest(
      `the kind in the data (${String(kind)}) does not match the expected kind (${type.kind})`,
    );
  }
  const metadata = body.metadata ?? {};
  if (typeof metadata !== 'object' || Array.isArray(metadata))
    throw badRequest('metadata: expected an object');
  return { ...body, apiVersion: expected, kind: type.kind, metadata: { ...(metadata as ObjectMeta) } };
}

/**
 * rest.EnsureObjectNamespaceMatchesRequestNamespace: an empty namespace takes the request's, a
 * cluster-scoped object loses any namespace, and a different one is refused.
 */
export function placeInNamespace(type: ResourceType, obj: KubeObject, namespace: string | undefined): void {
  const given = obj.metadata.namespace;
  if (!type.namespaced) {
    delete obj.metadata.namespace;
    return;
  }
  if (given && given !== namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  obj.metadata.namespace = namespace;
}

/** handlers.checkName: an update's object must carry the name in the URL. */
export function requireName(obj: KubeObject, name: string): void {
  if (obj.metadata.name !== name) {
    throw badRequest(
      `the name of the object (${obj.metadata.name ?? ''}) does not match the name on the URL (${name})`,
    );
  }
}
