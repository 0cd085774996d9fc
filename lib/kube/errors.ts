/**
 * Failures of Kubernetes API calls, turned into the product's named errors so that the state machine's
 * Retry/Catch can act on them: 429 and 5xx are throttling (retried), a connection that fails is an
 * unreachable cluster (retried), any other answer is KubeApiRejected carrying its status, for the caller
 * to interpret (404, 409, 422 …) or to end the run with.
 * Messages carry the HTTP status and the API's own Status message, never headers or request bodies.
 */
import { ApiException } from '@kubernetes/client-node';
import { ClusterUnreachableError, KubeApiRejectedError, KubeApiThrottledError } from '../errors.ts';

/** The HTTP status of an API failure, or undefined when the request got no answer. */
export function httpStatus(err: unknown): number | undefined {
  if (err instanceof KubeApiRejectedError) return err.status;
  return err instanceof ApiException ? err.code : undefined;
}

function statusMessage(err: ApiException<unknown>): string {
  const body = err.body;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      // not JSON: fall through
    }
    return body.slice(0, 200);
  }
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : '';
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** The first system error code along an error's cause chain (fetch wraps socket errors twice). */
function networkCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
  }
  // A request past REQUEST_TIMEOUT_MS (clients.ts): its signal aborts it with a TimeoutError.
  if ((err as { name?: unknown } | undefined)?.name === 'TimeoutError') return 'no answer in time';
  const message = err instanceof Error ? err.message : '';
  return /fetch failed|socket hang up|other side closed/i.test(message) ? 'connection failed' : undefined;
}

/** The named error for a failed call doing `what` (e.g. "list nodes"); anything else is left as it is. */
export function classifyApiError(err: unknown, what: string): unknown {
  if (err instanceof ApiException) {
    const code = err.code;
    if (code === 429 || code >= 500) {
      return new KubeApiThrottledError(`${what}: HTTP ${code} ${statusMessage(err)}`.trim());
    }
    return new KubeApiRejectedError(`${what}: HTTP ${code} ${statusMessage(err)}`.trim(), code);
  }
  const net = networkCode(err);
  if (net) return new ClusterUnreachableError(`${what}: the API server did not answer (${net})`);
  return err;
}

/** Run one API call, turning transport and server trouble into named errors. */
export async function call<T>(what: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    throw classifyApiError(err, what);
  }
}

/** The answer of a read, or undefined when the object is not there (HTTP 404); any other failure is thrown. */
export async function orNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (err) {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  }
}
