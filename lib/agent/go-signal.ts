/**
 * A pre-started agent's wait for its go signal (AGENT_GO_ENV): the key showing in the ConfigMap's data,
 * with the value this Job was created with (a nonce: a key left from an earlier Job of the same name is not
 * this one's go).
 * It reads the ConfigMap with its pod's ServiceAccount token, GETting it and then watching it, until the
 * key shows, its access is denied for long enough to be a mistake, or the overall bound passes. Only Node's
 * own modules: this runs inside the agent bundle, on the node.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import { AGENT_GO_ENV, AGENT_GO_UNTIL_ENV, AGENT_SERVICE_ACCOUNT } from './protocol.ts';

/** Where the ServiceAccount's token and the cluster CA are; moved only by tests. */
export const SA_DIR_ENV = 'CCM_MIGRATE_AGENT_SA_DIR';
const DEFAULT_SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface GoSignalOptions {
  /**
   * How long to wait for the signal, at most; AGENT_GO_UNTIL_ENV (the Job's own bound, in epoch ms) cuts
   * it shorter. @default 540_000
   */
  readonly waitMs?: number;
  /**
   * How long 401/403 answers may last, and how long the API server may stay out of reach before it first
   * answered, before the wait gives up: a missing Role or a NetworkPolicy does not mend itself. @default 30_000
   */
  readonly deniedMs?: number;
  /** The pause before starting over, doubled after each failure up to maxBackoffMs; @default 200. */
  readonly backoffMs?: number;
  /** @default 2_000 */
  readonly maxBackoffMs?: number;
  /** The watch's timeoutSeconds: the API server ends it then and the wait starts over; @default 30. */
  readonly watchSeconds?: number;
}

export type GoSignal = { go: true } | { go: false; error: string };

interface Target {
  readonly namespace: string;
  readonly name: string;
  readonly key: string;
  /** The value that is this Job's go; any value when absent. */
  readonly value?: string;
}

/** What waiting cannot mend: the pod has no ServiceAccount token or CA to read. */
class NoCredentialsError extends Error {}

/** An answer other than 200 (404 for the GET is "not yet", not this). */
class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;
const CONFIGMAP_KEY = /^[-._a-zA-Z0-9]+$/;
const GO_VALUE = /^[-._:a-zA-Z0-9]+$/;

function parseTarget(text: string | undefined): Target | string {
  const [namespace, name, key, value, ...rest] = (text ?? '').split('/');
  if (
    rest.length === 0 &&
    (value === undefined || GO_VALUE.test(value)) &&
    namespace !== undefined &&
    LABEL.test(namespace) &&
    name !== undefined &&
    SUBDOMAIN.test(name) &&
    key !== undefined &&
    CONFIGMAP_KEY.test(key)
  ) {
    return { namespace, name, key, ...(value !== undefined ? { value } : {}) };
  }
  return `${AGENT_GO_ENV} is not <namespace>/<configMap>/<key>[/<value>]: ${JSON.stringify(text)}`;
}

function apiServer(env: NodeJS.ProcessEnv): URL | string {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return 'KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set';
  try {
    return new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`);
  } catch {
    return `KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT do not make an address: ${host} ${port}`;
  }
}

/** Whether the ConfigMap holds this Job's go: its key, with its value when the Job names one. */
const isGo = (object: unknown, target: Target): boolean => {
  const data = (object as { data?: unknown } | undefined)?.data;
  if (typeof data !== 'object' || data === null || !Object.hasOwn(data, target.key)) return false;
  return target.value === undefined || (data as Record<string, unknown>)[target.key] === target.value;
};

/** The Status message of an error answer, short. */
function statusMessage(status: number, body: string): string {
  let message: unknown;
  try {
    message = (JSON.parse(body) as { message?: unknown }).message;
  } catch {}
  return `${status}${typeof message === 'string' ? ` (${message.slice(0, 200)})` : ''}`;
}

/** Resolves when `ms` passed or `signal` aborted, whichever is first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Wait for the go signal AGENT_GO_ENV names. `{ go: false }` when the variable is malformed, the pod has no
 * token, 401/403 lasts `deniedMs`, or `waitMs` passes; other failures are retried until then.
 */
export async function awaitGoSignal(env: NodeJS.ProcessEnv, opts: GoSignalOptions = {}): Promise<GoSignal> {
  const target = parseTarget(env[AGENT_GO_ENV]);
  if (typeof target === 'string') return { go: false, error: target };
  const server = apiServer(env);
  if (typeof server === 'string') return { go: false, error: server };
  const saDir = env[SA_DIR_ENV] ?? DEFAULT_SA_DIR;
  const { deniedMs = 30_000, backoffMs = 200, maxBackoffMs = 2_000 } = opts;
  const started = Date.now();
  const until = Number(env[AGENT_GO_UNTIL_ENV]);
  const waitMs = Math.max(
    0,
    Math.min(opts.waitMs ?? 540_000, Number.isFinite(until) && until > 0 ? until - started : Infinity),
  );
  const watchSeconds = opts.watchSeconds ?? 30;
  const configMap = `${target.namespace}/${target.name}`;
  const base = `/api/v1/namespaces/${target.namespace}/configmaps`;

  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), waitMs);
  let token = '';
  /** When the 401s/403s began; cleared by any answer that shows the token may read the ConfigMap. */
  let deniedSince: number | undefined;
  /** Whether the API server answered 200 or 404 once: the way to it works. */
  let reached = false;

  /**
   * One request; `onBody` gets the 200 answer's stream and settles the result. The token is read anew
   * each time: the kubelet rotates it.
   */
  const request = <T>(
    path: string,
    idleMs: number,
    onBody: (res: IncomingMessage, done: (value: T) => void, fail: (e: Error) => void) => void,
  ): Promise<T | 404> =>
    new Promise((resolve, reject) => {
      let ca: string;
      try {
        token = readFileSync(`${saDir}/token`, 'utf8').trim();
        ca = readFileSync(`${saDir}/ca.crt`, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        reject(
          new NoCredentialsError(`cannot read the pod's ServiceAccount token or CA in ${saDir}: ${code}`),
        );
        return;
      }
      const req = https.request(new URL(path, server), {
        ca,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        agent: false,
        signal: deadline.signal,
      });
      req.setTimeout(idleMs, () => req.destroy(new Error(`no answer within ${idleMs / 1000} s`)));
      req.on('error', reject);
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status === 401 || status === 403) deniedSince ??= Date.now();
        else if (status === 200 || status === 404) {
          deniedSince = undefined;
          reached = true;
        }
        res.on('error', reject);
        // Cut off (the deadline, a reset): settles a request that neither ended nor failed; a no-op after.
        res.on('close', () => reject(new Error('the connection closed')));
        if (status !== 200) {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (body.length < 4096) body += chunk;
          });
          res.on('end', () => {
            if (status === 404) resolve(404);
            else reject(new ApiError(status, statusMessage(status, body)));
          });
          return;
        }
        const done = (value: T): void => {
          resolve(value);
          req.destroy();
        };
        onBody(res, done, reject);
      });
      req.end();
    });

  /** GET the ConfigMap: whether the key shows, and the resourceVersion to watch from. */
  const get = (): Promise<{ go: boolean; rv?: string } | 404> =>
    request(`${base}/${target.name}`, 10_000, (res, done, fail) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        try {
          const cm = JSON.parse(body) as { metadata?: { resourceVersion?: string } };
          done({ go: isGo(cm, target), rv: cm.metadata?.resourceVersion });
        } catch {
          fail(new Error(`GET ${configMap}: the answer is not JSON`));
        }
      });
    });

  /** Watch the ConfigMap from `rv`: true once the key shows, false when the watch ends (or 410 Gone). */
  const watch = (rv: string | undefined): Promise<boolean | 404> => {
    const query = new URLSearchParams({ fieldSelector: `metadata.name=${target.name}`, watch: 'true' });
    if (rv) query.set('resourceVersion', rv);
    query.set('timeoutSeconds', String(watchSeconds));
    // The server ends a quiet watch at timeoutSeconds; a dead connection shows as no bytes for longer.
    return request(`${base}?${query}`, (watchSeconds + 15) * 1000, (res, done, fail) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (!line) continue;
          let event: { type?: string; object?: { code?: number; message?: string } };
          try {
            event = JSON.parse(line);
          } catch {
            fail(new Error(`watch ${configMap}: an event is not JSON`));
            return;
          }
          if ((event.type === 'ADDED' || event.type === 'MODIFIED') && isGo(event.object, target)) {
            done(true);
            return;
          }
          if (event.type === 'ERROR') {
            const code = event.object?.code ?? 0;
            // 410 Gone: the resourceVersion is too old to watch from; a new GET gives a current one.
            if (code === 410) done(false);
            else
              fail(
                new ApiError(code, `watch ${configMap}: ${code} (${event.object?.message?.slice(0, 200)})`),
              );
            return;
          }
        }
      });
      res.on('end', () => done(false));
    });
  };

  let pause = backoffMs;
  /** What kept the key from showing last, for the timeout's error. */
  let last: string | undefined;
  try {
    for (;;) {
      try {
        const got = await get();
        if (got !== 404 && got.go) return { go: true };
        last = got === 404 ? `ConfigMap ${configMap} does not exist` : undefined;
        if ((await watch(got === 404 ? undefined : got.rv)) === true) return { go: true };
        pause = backoffMs;
      } catch (err) {
        if (deadline.signal.aborted) break;
        if (err instanceof NoCredentialsError) return { go: false, error: err.message };
        const status = err instanceof ApiError ? err.status : undefined;
        last = (err as Error).message;
        // A RoleBinding just created takes a moment to count; one missing for this long is a mistake.
        if (
          (status === 401 || status === 403) &&
          deniedSince !== undefined &&
          Date.now() - deniedSince >= deniedMs
        ) {
          const why =
            status === 401
              ? 'its token is not accepted'
              : 'it may not read the ConfigMap (its Role or RoleBinding is missing)';
          return {
            go: false,
            error: scrub(
              `the API server answered ${status} to reading ConfigMap ${configMap} for ${seconds(deniedMs)}: ` +
                `a problem with the pod's ServiceAccount (${AGENT_SERVICE_ACCOUNT}): ${why}; ${last}`,
              token,
            ),
          };
        }
        if (!reached && status === undefined && Date.now() - started >= deniedMs) {
          return {
            go: false,
            error: scrub(
              `the API server did not answer for ${seconds(deniedMs)} (a NetworkPolicy, no route?): ${last}`,
              token,
            ),
          };
        }
      }
      await sleep(pause, deadline.signal);
      if (deadline.signal.aborted) break;
      pause = Math.min(pause * 2, maxBackoffMs);
    }
    const why = last ? ` (last: ${last})` : '';
    return {
      go: false,
      error: scrub(
        `no go signal within ${seconds(waitMs)}: key ${target.key} of ConfigMap ${configMap}${why}`,
        token,
      ),
    };
  } finally {
    clearTimeout(timer);
  }
}

const seconds = (ms: number): string => `${ms / 1000} s`;

/** An error's text without the token, whatever a server or library put into it. */
function scrub(text: string, token: string): string {
  return token ? text.replaceAll(token, '<token>') : text;
}
