/**
 * What stands in front of every resource request a twin serves, whichever server answers it (the
 * in-process one, or the proxy before a real kube-apiserver): the request ledger (counts by verb, and each
 * access in RBAC's terms) and the injected faults (latency, a reset connection, an error status).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { TwinContext } from '../context.ts';
import { StatusError } from '../errors.ts';
import type { Verb } from '../faults.ts';
import type { ApiVerb } from './route.ts';

export interface ApiServerStats {
  readonly requests: number;
  readonly byVerb: Readonly<Record<string, number>>;
  /** Each distinct resource request, in RBAC's terms (what a caller's Role must allow), and how many. */
  readonly accesses: readonly (ResourceAccess & { readonly count: number })[];
  /** Each distinct resource request with the status code it was answered with, and how many. */
  readonly answers: readonly (ResourceAccess & { readonly code: number; readonly count: number })[];
}

/**
 * One kind of resource request as RBAC authorises it (verb, API group, resource[/subresource], namespace,
 * name).
 */
export interface ResourceAccess {
  readonly verb: ApiVerb;
  /** '' for the core group. */
  readonly group: string;
  /** `pods`, or `nodes/status` for a subresource. */
  readonly resource: string;
  /** Undefined for cluster-scoped resources and requests across all namespaces. */
  readonly namespace: string | undefined;
  /**
   * The object named in the path, which a rule's resourceNames match; undefined for a list, a watch of a
   * collection, or a create by POST, which no resourceNames rule can allow.
   */
  readonly name: string | undefined;
}

/**
 * The name RBAC sees on a request: the one in the path, or for a list or watch, the one its field selector
 * requires (`metadata.name=x`), as RequestInfoFactory derives it
 * (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go): a watch of one Lease is allowed by resourceNames.
 */
export function requestedName(
  verb: ApiVerb,
  pathName: string | undefined,
  query: URLSearchParams,
): string | undefined {
  if (pathName !== undefined || (verb !== 'list' && verb !== 'watch')) return pathName;
  for (const term of (query.get('fieldSelector') ?? '').split(',')) {
    const name = /^metadata\.name==?(.+)$/.exec(term.trim())?.[1];
    // A name that could not be a path segment is not taken (path.IsValidPathSegmentName).
    if (name !== undefined && !/[/%]/.test(name) && name !== '.' && name !== '..') return name;
  }
  return undefined;
}

export class RequestLedger {
  #requests = 0;
  readonly #byVerb: Record<string, number> = {};
  readonly #accesses = new Map<string, ResourceAccess & { count: number }>();
  readonly #answers = new Map<string, ResourceAccess & { code: number; count: number }>();

  /** Any request the server answers (discovery and health included). */
  request(): void {
    this.#requests += 1;
  }

  /** A request on a resource: counted under its verb, and as an access RBAC must allow. */
  access(access: ResourceAccess): void {
    this.#byVerb[access.verb] = (this.#byVerb[access.verb] ?? 0) + 1;
    this.authorizedAs(access);
  }

  /**
   * An access RBAC must allow beside the request's own, not another request (an apply that creates is
   * authorised as a create too): counted once by verb, the verbs add up to the requests on resources.
   */
  authorizedAs(access: ResourceAccess): void {
    const key = JSON.stringify(access);
    const seen = this.#accesses.get(key) ?? { ...access, count: 0 };
    seen.count += 1;
    this.#accesses.set(key, seen);
  }

  /** The answer's status code, once it is sent (a reset connection has none). */
  answered(access: ResourceAccess, code: number): void {
    const key = JSON.stringify([access, code]);
    const seen = this.#answers.get(key) ?? { ...access, code, count: 0 };
    seen.count += 1;
    this.#answers.set(key, seen);
  }

  stats(): ApiServerStats {
    return {
      requests: this.#requests,
      byVerb: { ...this.#byVerb },
      accesses: [...this.#accesses.values()].map((a) => ({ ...a })),
      answers: [...this.#answers.values()].map((a) => ({ ...a })),
    };
  }
}

function injectedFailure(code: 429 | 500 | 503): StatusError {
  if (code === 429) {
    return new StatusError('TooManyRequests', 'Too many requests, please try again later.', {
      retryAfterSeconds: 1,
    });
  }
  if (code === 503)
    return new StatusError('ServiceUnavailable', 'the server is currently unable to handle the request');
  return new StatusError('InternalError', 'Internal error occurred: injected fault', {
    causes: [{ message: 'injected fault' }],
  });
}

/** The object a request names, by storage key. */
export interface RequestTarget {
  readonly key: string;
  readonly namespace: string | undefined;
  readonly name: string;
}

let concurrentWrites = 0;

/** Another client's write of the target: an annotation changes, and so its resourceVersion. */
function writeConcurrently(ctx: TwinContext, target: RequestTarget): void {
  const current = ctx.store.tryGet(target.key, target.namespace, target.name);
  if (!current) return;
  const annotations = { ...current.metadata.annotations, [CONCURRENT_WRITE]: String(++concurrentWrites) };
  ctx.store.update(target.key, { ...current, metadata: { ...current.metadata, annotations } });
}

/** The annotation the concurrentWrite fault changes. */
export const CONCURRENT_WRITE = 'twin.ccm-migrate/concurrent-write';

/**
 * Wait out the request's latency (the spec's per-request latency plus any injected), then say what the
 * faults do to it: reset the connection, fail it with a status, or nothing (serve it), after another
 * client's write of the target where a concurrentWrite fault says so.
 */
export async function requestFault(
  ctx: TwinContext,
  verb: ApiVerb,
  plural: string,
  target?: RequestTarget,
): Promise<{ reset: true } | { error: StatusError } | undefined> {
  // Faults are configured per verb; a collection delete is a delete.
  const faultVerb: Verb = verb === 'deletecollection' ? 'delete' : verb;
  const fault = ctx.faults.forRequest(faultVerb, plural);
  const delay = fault.extraLatencyMs + ctx.spec.latencies.apiRequest;
  if (delay > 0) await sleep(delay, undefined, { signal: ctx.signal });
  if (fault.concurrentWrite && target) writeConcurrently(ctx, target);
  if (fault.reset) return { reset: true };
  if (fault.errorCode) return { error: injectedFailure(fault.errorCode) };
  return undefined;
}
