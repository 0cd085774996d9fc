/**
 * Test support for the API server tests: a TwinContext with an empty store and no simulated nodes, the API
 * server in front of it, and the real @kubernetes/client-node clients pointed at it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PolicyV1Api,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { type ApiServer, startApiServer } from '../../lib/twin/api/server.ts';
import type { TwinContext } from '../../lib/twin/context.ts';
import { Faults } from '../../lib/twin/faults.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { ObjectStore } from '../../lib/twin/store.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/twins/aws-mini.yaml', import.meta.url));

export interface ApiHarness {
  readonly ctx: TwinContext;
  readonly api: ApiServer;
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly batch: BatchV1Api;
  readonly coordination: CoordinationV1Api;
  readonly rbac: RbacAuthorizationV1Api;
  readonly policy: PolicyV1Api;
  readonly objects: KubernetesObjectApi;
  /** Switch what the server's apiAvailable() answers. */
  setAvailable(available: boolean): void;
  /** A raw request to the server, for what the typed clients cannot send (bad bodies, odd paths). */
  fetch(pathAndQuery: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

export async function startApiHarness(opts: { faultRandom?: () => number } = {}): Promise<ApiHarness> {
  const spec = await loadTwinSpec(FIXTURE);
  const stateDir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-api-test-'));
  const abort = new AbortController();
  const faults = new Faults([], opts.faultRandom ? { random: opts.faultRandom } : {});
  const store = new ObjectStore();
  const ctx: TwinContext = {
    spec,
    store,
    stateDir,
    faults,
    signal: abort.signal,
    startedAt: Date.now(),
  };
  let available = true;
  const api = await startApiServer({
    ctx,
    store,
    apiAvailable: () => available,
    host: '127.0.0.1',
    port: 0,
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'twin', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'admin', token: 'test-token' }],
    contexts: [{ name: 'twin', cluster: 'twin', user: 'admin', namespace: 'default' }],
    currentContext: 'twin',
  });
  return {
    ctx,
    api,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    rbac: kc.makeApiClient(RbacAuthorizationV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    objects: KubernetesObjectApi.makeApiClient(kc),
    setAvailable: (a) => {
      available = a;
    },
    fetch: (p, init) => fetch(`${api.url}${p}`, init),
    stop: async () => {
      abort.abort();
      await api.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** JSON read loosely, for assertions that walk answers of any shape. */
// biome-ignore lint/suspicious/noExplicitAny: assertions walk arbitrary JSON answers
export type Json = any;

/** A response's JSON body. */
export function json(res: Response): Promise<Json> {
  return res.json();
}

function parseJson(text: string): Json {
  try {
    return JSON.parse(text);
  } catch {
    return { text };
  }
}

/** The error an API call failed with: the ApiException's HTTP code and its Status body. */
export async function failure(
  call: Promise<unknown>,
): Promise<{ code: number; status: Json; headers: Record<string, string> }> {
  try {
    await call;
  } catch (err) {
    const e = err as { code?: number; body?: unknown; headers?: Record<string, string> };
    if (typeof e.code !== 'number') throw err;
    return {
      code: e.code,
      headers: e.headers ?? {},
      status: typeof e.body === 'string' ? parseJson(e.body) : (e.body as Json),
    };
  }
  throw new Error('expected the call to fail');
}
