/**
 * One function per verb: from a parsed request to the answer's code and body. The store does the object
 * semantics (uid, resourceVersion, generation, conflicts, finalizers, garbage collection); these add what
 * the REST layer adds: decoding and checking bodies, options, dry runs, patches and field managers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { badRequest, notFound, StatusError } from '../errors.ts';
import { applyPatch, patchTypeOf, recordUpdate, serverSideApply } from '../patch/index.ts';
import { apiVersionOf, typeKey } from '../resources.ts';
import type { KubeObject, ObjectStore } from '../store.ts';
import { decodeBody, objectBodyFormat } from './body.ts';
import { dryRunCreate, dryRunDelete, dryRunUpdate } from './dryrun.ts';
import { decodeFields, refuseUndeclared } from './field-validation.ts';
import { listObjects } from './list.ts';
import { asObjectOf, placeInNamespace, requireName } from './objects.ts';
import { boolParam, deleteOptionsOf, fieldManagerOf, isDryRun, validatePatchOptions } from './options.ts';
import {
  contentTypeOf,
  partialObjectMetadata,
  partialObjectMetadataList,
  partialRenderingFor,
} from './partial-metadata.ts';
import type { ResourceRoute } from './route.ts';
import { requestMatcher } from './selectors.ts';
import { validateObject } from './validation.ts';

export interface VerbRequest {
  readonly store: ObjectStore;
  /** The scale subresource is served apart (scale.ts). */
  readonly route: ResourceRoute & { readonly subresource: 'status' | undefined };
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface Answer {
  readonly code: number;
  readonly body: unknown;
  /** When not plain JSON (a metadata-only GET). */
  readonly contentType?: string;
  /** Warning headers (dropped unknown fields). */
  readonly warnings?: readonly string[];
}

function nameOf(r: VerbRequest): string {
  return r.route.name as string;
}

function keyOf(r: VerbRequest): string {
  return typeKey(r.route.type);
}

export function getObject(r: VerbRequest): Answer {
  // Negotiated first, as the API server does: a 406 before a 404.
  const partial = partialRenderingFor(r.headers.accept, 'object');
  const obj = r.store.get(keyOf(r), r.route.namespace, nameOf(r));
  if (!partial) return { code: 200, body: obj };
  return {
    code: 200,
    body: partialObjectMetadata(obj, partial.version),
    contentType: contentTypeOf(partial),
  };
}

export function listCollection(r: VerbRequest): Answer {
  const partial = partialRenderingFor(r.headers.accept, 'list');
  const list = listObjects(r.store, r.route.type, r.route.namespace, r.query);
  if (!partial) return { code: 200, body: list };
  return {
    code: 200,
    body: partialObjectMetadataList(list, partial.version),
    contentType: contentTypeOf(partial),
  };
}

export function createObject(r: VerbRequest): Answer {
  const { type } = r.route;
  const obj = asObjectOf(
    type,
    decodeBody(r.body, objectBodyFormat(r.headers['content-type'])) as Record<string, unknown>,
  );
  // genericregistry.Store.Create refuses a version on a new object (a stale copy of another one).
  if (obj.metadata.resourceVersion)
    throw badRequest('resourceVersion should not be set on objects to be created');
  placeInNamespace(type, obj, r.route.namespace);
  const warnings = decodeFields(type, obj, r.query);
  validateObject(type, obj);
  const dryRun = isDryRun('CreateOptions', r.query);
  const fieldManager = fieldManagerOf('CreateOptions', r.query, r.headers);
  const next = recordUpdate({ type, current: undefined, next: obj, fieldManager });
  const body = dryRun ? dryRunCreate(r.store, type, next) : r.store.create(keyOf(r), next);
  return { code: 201, body, warnings };
}

/** Store an edited object (update, patch): not found is a 404, as neither creates on update here. */
function replace(r: VerbRequest, next: KubeObject, dryRun: boolean): KubeObject {
  const { subresource } = r.route;
  return dryRun
    ? dryRunUpdate(r.store, r.route.type, next, subresource)
    : r.store.update(keyOf(r), next, subresource ? { subresource } : {});
}

export function updateObject(r: VerbRequest): Answer {
  const { type, subresource } = r.route;
  const obj = asObjectOf(
    type,
    decodeBody(r.body, objectBodyFormat(r.headers['content-type'])) as Record<string, unknown>,
  );
  requireName(obj, nameOf(r));
  placeInNamespace(type, obj, r.route.namespace);
  const dryRun = isDryRun('UpdateOptions', r.query);
  const fieldManager = fieldManagerOf('UpdateOptions', r.query, r.headers);
  const current = r.store.get(keyOf(r), r.route.namespace, nameOf(r));
  const warnings = decodeFields(type, obj, r.query);
  if (!subresource) validateObject(type, obj, current);
  const next = recordUpdate({
    type,
    current,
    next: obj,
    fieldManager,
    ...(subresource ? { subresource } : {}),
  });
  return { code: 200, body: replace(r, next, dryRun), warnings };
}

const ACCEPTED_PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];

export function patchObject(r: VerbRequest): Answer {
  const { type, subresource } = r.route;
  const contentType = r.headers['content-type'];
  const patchType = patchTypeOf(contentType);
  if (!patchType) {
    throw new StatusError(
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${ACCEPTED_PATCH_TYPES.join(', ')}`,
    );
  }
  validatePatchOptions(patchType === 'apply', r.query);
  const dryRun = isDryRun('PatchOptions', r.query);
  const fieldManager = fieldManagerOf('PatchOptions', r.query, r.headers);
  const current = r.store.tryGet(keyOf(r), r.route.namespace, nameOf(r));
  const sub = subresource ? { subresource } : {};

  if (patchType === 'apply') {
    // Apply creates a missing object, but not through its status: that is still a 404.
    if (!current && subresource) throw notFound(type, nameOf(r));
    const applied = asObjectOf(type, decodeBody(r.body, 'yaml') as Record<string, unknown>);
    applied.metadata.name ||= nameOf(r);
    requireName(applied, nameOf(r));
    placeInNamespace(type, applied, r.route.namespace);
    refuseUndeclared(type, applied);
    const force = boolParam(r.query, 'force');
    const next = serverSideApply({ type, current, applied, fieldManager, force, ...sub });
    if (!subresource) validateObject(type, next, current);
    // Apply creates what does not exist yet (201), as the real patch handler does for apply patches.
    if (!current)
      return { code: 201, body: dryRun ? dryRunCreate(r.store, type, next) : r.store.create(keyOf(r), next) };
    return { code: 200, body: replace(r, next, dryRun) };
  }

  if (!current) throw notFound(type, nameOf(r));
  const patch = decodeBody(r.body, 'json', { allowArray: patchType === 'json' });
  // applyPatch also checks what a patch may not change: type, name and namespace.
  const patched = applyPatch(type, current, patchType, patch);
  // A strategic merge patch drops what the type does not have, silently; the others per fieldValidation.
  const warnings = patchType === 'strategic' ? [] : decodeFields(type, patched, r.query);
  if (patchType === 'strategic')
    decodeFields(type, patched, new URLSearchParams({ fieldValidation: 'Ignore' }));
  if (!subresource) validateObject(type, patched, current);
  const next = recordUpdate({ type, current, next: patched, fieldManager, ...sub });
  return { code: 200, body: replace(r, next, dryRun), warnings };
}

/**
 * Registries that answer a delete with the deleted object (genericregistry.Store.ReturnDeletedObject);
 * the rest answer with a Status Success.
 */
const RETURNS_DELETED_OBJECT = new Set(['pods', 'services', 'serviceaccounts', 'namespaces']);

export function deleteObject(r: VerbRequest): Answer {
  const { type, namespace } = r.route;
  const name = nameOf(r);
  const body = r.body.toString('utf8').trim()
    ? (decodeBody(r.body, objectBodyFormat(r.headers['content-type'])) as Record<string, unknown>)
    : {};
  const opts = deleteOptionsOf(body, r.query);
  const storeOpts = {
    ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
    ...(opts.preconditions ? { preconditions: opts.preconditions } : {}),
  };
  const result = opts.dryRun
    ? dryRunDelete(r.store, type, namespace, name, storeOpts)
    : r.store.delete(keyOf(r), namespace, name, storeOpts);
  // Still there (finalizers): the object, with its deletionTimestamp, is the answer.
  const stillThere = opts.dryRun
    ? !!result.metadata.deletionTimestamp
    : !!r.store.tryGet(keyOf(r), namespace, name);
  if (stillThere || RETURNS_DELETED_OBJECT.has(keyOf(r))) return { code: 200, body: result };
  return {
    code: 200,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name, group: type.group, kind: type.plural, uid: result.metadata.uid },
    },
  };
}

/** DELETE on a collection: every matching object, one by one (genericregistry.Store.DeleteCollection). */
export function deleteCollection(r: VerbRequest): Answer {
  const { type, namespace } = r.route;
  const matches = requestMatcher(r.query, type);
  const body = r.body.toString('utf8').trim()
    ? (decodeBody(r.body, objectBodyFormat(r.headers['content-type'])) as Record<string, unknown>)
    : {};
  const opts = deleteOptionsOf(body, r.query);
  const deleted: KubeObject[] = [];
  for (const obj of r.store.list(keyOf(r), namespace).items) {
    if (matches && !matches(obj)) continue;
    const ns = obj.metadata.namespace;
    // An earlier deletion may have taken this one with it (garbage collection).
    if (!r.store.tryGet(keyOf(r), ns, obj.metadata.name)) continue;
    const storeOpts = opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {};
    deleted.push(
      opts.dryRun
        ? dryRunDelete(r.store, type, ns, obj.metadata.name, storeOpts)
        : r.store.delete(keyOf(r), ns, obj.metadata.name, storeOpts),
    );
  }
  return {
    code: 200,
    body: {
      kind: type.listKind,
      apiVersion: apiVersionOf(type),
      metadata: { resourceVersion: String(r.store.resourceVersion) },
      items: deleted,
    },
  };
}
