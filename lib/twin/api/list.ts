/**
 * list: selectors, then `limit`/`continue` pagination as the etcd3 storage does it
 * (k8s.io/apiserver/pkg/storage/etcd3/store.go GetList, pkg/storage/continue.go): the token is
 * base64url({"v":"meta.k8s.io/v1","rv":<list rv>,"start":"<last key>\u0000"}), later pages report the first
 * page's resourceVersion, and remainingItemCount is given only for unfiltered lists.
 */
import { badRequest, StatusError } from '../errors.ts';
import { apiVersionOf, type ResourceType, typeKey } from '../resources.ts';
import type { KubeObject, ObjectStore } from '../store.ts';
import { requestMatcher } from './selectors.ts';

interface ContinueToken {
  readonly rv: number;
  readonly start: string;
}

const TOKEN_VERSION = 'meta.k8s.io/v1';

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: TOKEN_VERSION, ...token })).toString('base64url');
}

function decodeContinue(text: string): ContinueToken {
  const invalid = (why: string) => badRequest(`invalid continue token: continue key is not valid: ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid('continue key is not a valid base64 JSON object');
  }
  const t = parsed as { v?: unknown; rv?: unknown; start?: unknown } | null;
  if (!t || typeof t !== 'object' || t.v !== TOKEN_VERSION)
    throw invalid('incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (typeof t.rv !== 'number' || !Number.isInteger(t.rv) || t.rv < 0)
    throw invalid('resource version is not valid');
  if (typeof t.start !== 'string' || t.start === '' || t.start.includes('..'))
    throw invalid('key is not valid');
  return { rv: t.rv, start: t.start };
}

/** The object's storage key, in the order store.list sorts by. */
function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

/** Index of the first item whose key is >= start (items are sorted by key). */
function firstAtOrAfter(items: readonly KubeObject[], start: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keyOf(items[mid] as KubeObject) < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function parseLimit(text: string | null): number {
  if (text === null || text === '') return 0;
  const n = Number(text);
  if (!Number.isInteger(n)) throw badRequest(`limit: invalid value "${text}"`);
  return Math.max(0, n);
}

/**
 * A continue token names a point in the store's history; once that history is gone the real server answers
 * 410 Expired (and so does this one, when the store can no longer replay events from that version).
 */
function checkNotCompacted(store: ObjectStore, rv: number): void {
  try {
    if (rv < store.resourceVersion) store.eventsSince(rv);
  } catch (err) {
    if (err instanceof StatusError && err.reason === 'Expired') {
      throw new StatusError(
        'Expired',
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
      );
    }
    throw err;
  }
}

export interface ListBody {
  readonly kind: string;
  readonly apiVersion: string;
  readonly metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  readonly items: readonly KubeObject[];
}

export function listObjects(
  store: ObjectStore,
  type: ResourceType,
  namespace: string | undefined,
  query: URLSearchParams,
): ListBody {
  const matches = requestMatcher(query, type);
  const limit = parseLimit(query.get('limit'));
  const token = query.get('continue') ? decodeContinue(query.get('continue') as string) : undefined;
  if (token) checkNotCompacted(store, token.rv);
  const { items, resourceVersion } = store.list(typeKey(type), namespace);
  const listRv = token ? String(token.rv) : resourceVersion;
  let i = token ? firstAtOrAfter(items, token.start) : 0;
  const page: KubeObject[] = [];
  for (; i < items.length && (limit === 0 || page.length < limit); i++) {
    const obj = items[i] as KubeObject;
    if (!matches || matches(obj)) page.push(obj);
  }
  const metadata: ListBody['metadata'] = { resourceVersion: listRv };
  // Like etcd3, "more" means more keys in range, matching or not: a filtered list may end with an empty page.
  if (limit > 0 && i < items.length) {
    metadata.continue = encodeContinue({
      rv: Number(listRv),
      start: `${keyOf(page[page.length - 1] as KubeObject)}\u0000`,
    });
    if (!matches) metadata.remainingItemCount = items.length - i;
  }
  return { kind: type.listKind, apiVersion: apiVersionOf(type), metadata, items: page };
}
