/**
 * A pre-started agent's wait for its go signal, against a local HTTPS server standing in for the API server
 * (a serving certificate of a CA made with openssl, the CA and a token in a temp ServiceAccount directory).
 */
import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { awaitGoSignal, SA_DIR_ENV } from '../../lib/agent/go-signal.ts';
import { agentMain, HOST_ROOT_ENV } from '../../lib/agent/main.ts';
import {
  AGENT_GO_ENV,
  AGENT_GO_UNTIL_ENV,
  AGENT_REQUEST_ENV,
  AgentResultSchema,
  TERMINATION_LOG_ENV,
} from '../../lib/agent/protocol.ts';
import { createClusterPki } from '../../lib/twin/real/pki.ts';

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.secret-token-text.sig';
const CM_PATH = '/api/v1/namespaces/kube-system/configmaps/ccm-migrate-agent-go';
const WATCH_PATH = '/api/v1/namespaces/kube-system/configmaps';
const FAST = { backoffMs: 5, maxBackoffMs: 20 };

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler;
const seen: { path: string; query: URLSearchParams; auth: string | undefined }[] = [];

let pkiDir: string;
let server: https.Server;
let port: number;
beforeAll(async () => {
  pkiDir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-go-pki-'));
  const pki = createClusterPki(pkiDir);
  server = https.createServer({ cert: pki.serving.cert, key: pki.serving.key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    seen.push({ path: url.pathname, query: url.searchParams, auth: req.headers.authorization });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(pkiDir, { recursive: true, force: true });
});

let dir: string;
let env: NodeJS.ProcessEnv;
beforeEach(async () => {
  seen.length = 0;
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-go-'));
  await mkdir(path.join(dir, 'sa'));
  await writeFile(path.join(dir, 'sa/token'), `${TOKEN}\n`);
  await writeFile(path.join(dir, 'sa/ca.crt'), await readFile(path.join(pkiDir, 'ca.crt')));
  env = {
    KUBERNETES_SERVICE_HOST: '127.0.0.1',
    KUBERNETES_SERVICE_PORT: String(port),
    [SA_DIR_ENV]: path.join(dir, 'sa'),
    [AGENT_GO_ENV]: 'kube-system/ccm-migrate-agent-go/ccm-migrate-agent-node-1',
  };
});
afterEach(async () => {
  server.closeAllConnections();
  await rm(dir, { recursive: true, force: true });
});

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const configMap = (rv: string, data: Record<string, string> = {}) => ({
  kind: 'ConfigMap',
  metadata: { name: 'ccm-migrate-agent-go', namespace: 'kube-system', resourceVersion: rv },
  data,
});
const GO = { 'ccm-migrate-agent-node-1': '' };
const event = (res: ServerResponse, type: string, object: unknown): void => {
  res.write(`${JSON.stringify({ type, object })}\n`);
};

it('goes at once when the key is already in the ConfigMap, with the token from the ServiceAccount', async () => {
  handler = (_req, res) => json(res, 200, configMap('7', { other: 'x', ...GO }));
  expect(await awaitGoSignal(env)).toEqual({ go: true });
  expect(seen).toEqual([{ path: CM_PATH, query: new URLSearchParams(), auth: `Bearer ${TOKEN}` }]);
});

it('watches from the GET’s resourceVersion and goes when the key is added', async () => {
  handler = (req, res) => {
    if (!req.url?.includes('watch=true')) return json(res, 200, configMap('7', { other: 'x' }));
    res.writeHead(200, { 'content-type': 'application/json' });
    event(res, 'MODIFIED', configMap('8', { other: 'y' }));
    setTimeout(() => event(res, 'MODIFIED', configMap('9', { other: 'y', ...GO })), 50);
  };
  expect(await awaitGoSignal(env, FAST)).toEqual({ go: true });
  expect(seen.map((s) => s.path)).toEqual([CM_PATH, WATCH_PATH]);
  expect(Object.fromEntries(seen[1]?.query ?? [])).toEqual({
    fieldSelector: 'metadata.name=ccm-migrate-agent-go',
    watch: 'true',
    resourceVersion: '7',
    timeoutSeconds: '30',
  });
});

it('starts over with a GET when the watch ends or says 410 Gone, reading the token again each time', async () => {
  let gets = 0;
  handler = (req, res) => {
    if (req.url?.includes('watch=true')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (gets === 1) return res.end(); // the watch's timeoutSeconds passed
      return event(res, 'ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
    }
    gets++;
    if (gets === 1) {
      writeFileSync(path.join(dir, 'sa/token'), 'rotated-token'); // the kubelet rotates it
      return json(res, 404, { kind: 'Status', code: 404, reason: 'NotFound' });
    }
    return json(res, 200, configMap(String(gets), gets === 3 ? GO : {}));
  };
  expect(await awaitGoSignal(env, FAST)).toEqual({ go: true });
  expect(seen.map((s) => s.path)).toEqual([CM_PATH, WATCH_PATH, CM_PATH, WATCH_PATH, CM_PATH]);
  // The ConfigMap did not exist yet: the first watch has no resourceVersion to start from.
  expect(seen[1]?.query.has('resourceVersion')).toBe(false);
  expect(seen[3]?.query.get('resourceVersion')).toBe('2');
  expect(seen.map((s) => s.auth)).toEqual([`Bearer ${TOKEN}`, ...Array(4).fill('Bearer rotated-token')]);
});

it('goes on its own value only: a key left by an earlier Job of the same name is not its go', async () => {
  const own = { ...env, [AGENT_GO_ENV]: `${env[AGENT_GO_ENV]}/r1:00aa` };
  const left = { 'ccm-migrate-agent-node-1': 'r1:ff11' };
  handler = (req, res) => {
    if (!req.url?.includes('watch=true')) return json(res, 200, configMap('7', left));
    res.writeHead(200, { 'content-type': 'application/json' });
    event(res, 'MODIFIED', configMap('8', left));
    setTimeout(() => event(res, 'MODIFIED', configMap('9', { 'ccm-migrate-agent-node-1': 'r1:00aa' })), 50);
  };
  expect(await awaitGoSignal(own, FAST)).toEqual({ go: true });
  expect(seen.map((s) => s.path)).toEqual([CM_PATH, WATCH_PATH]);

  handler = (_req, res) => json(res, 200, configMap('7', left));
  expect(await awaitGoSignal(own, { ...FAST, waitMs: 200 })).toMatchObject({ go: false });
});

it('waits no longer than its Job allows (AGENT_GO_UNTIL_ENV), whatever its own bound', async () => {
  handler = (_req, res) => json(res, 200, configMap('7'));
  const started = Date.now();
  const signal = await awaitGoSignal({ ...env, [AGENT_GO_UNTIL_ENV]: String(started + 200) }, FAST);
  expect(signal).toMatchObject({ go: false, error: expect.stringContaining('no go signal within') });
  expect(Date.now() - started).toBeLessThan(2000);
});

it('gives up soon when the API server never answers (a NetworkPolicy): waiting would not mend it', async () => {
  const closed = https.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const unused = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const signal = await awaitGoSignal(
    { ...env, KUBERNETES_SERVICE_PORT: String(unused) },
    {
      ...FAST,
      deniedMs: 200,
    },
  );
  expect(signal).toMatchObject({ go: false, error: expect.stringContaining('did not answer for 0.2 s') });
});

it('retries 403 for a while, then gives up naming the status and the ServiceAccount, never the token', async () => {
  handler = (req, res) =>
    // A server that echoes what it got: the token must still not reach the answer.
    json(res, 403, { kind: 'Status', code: 403, message: `forbidden: ${req.headers.authorization}` });
  const started = Date.now();
  const signal = await awaitGoSignal(env, { ...FAST, deniedMs: 200 });
  expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  expect(seen.length).toBeGreaterThan(2);
  expect(signal).toMatchObject({ go: false, error: expect.stringContaining('answered 403') });
  expect(signal).toMatchObject({
    go: false,
    error: expect.stringContaining('ServiceAccount (ccm-migrate-agent)'),
  });
  expect(JSON.stringify(signal)).not.toContain('secret-token-text');
});

it('gives up when no go signal comes within the bound', async () => {
  handler = (req, res) => {
    if (!req.url?.includes('watch=true')) return json(res, 200, configMap('7'));
    res.writeHead(200, { 'content-type': 'application/json' }); // a quiet watch, held open
    res.flushHeaders();
  };
  const signal = await awaitGoSignal(env, { ...FAST, waitMs: 300 });
  expect(signal).toEqual({
    go: false,
    error:
      'no go signal within 0.3 s: key ccm-migrate-agent-node-1 of ConfigMap kube-system/ccm-migrate-agent-go',
  });
});

it('keeps the token out of every error: a 500 echoing it, an untrusted certificate, a malformed signal, no token', async () => {
  handler = (_req, res) => json(res, 500, { message: `internal ${TOKEN}` });
  const failing = await awaitGoSignal(env, { ...FAST, waitMs: 200 });
  expect(failing).toMatchObject({
    go: false,
    error: expect.stringMatching(/^no go signal within 0.2 s: .*500/),
  });

  await writeFile(path.join(dir, 'sa/ca.crt'), await readFile(path.join(pkiDir, 'front-proxy-ca.crt')));
  const untrusted = await awaitGoSignal(env, { ...FAST, waitMs: 200 });
  expect(untrusted).toMatchObject({ go: false, error: expect.stringMatching(/certificate/) });

  const malformed = await awaitGoSignal({ ...env, [AGENT_GO_ENV]: 'kube-system/ccm-migrate-agent-go' });
  expect(malformed).toMatchObject({ go: false, error: expect.stringContaining(AGENT_GO_ENV) });

  await rm(path.join(dir, 'sa/token'));
  const noToken = await awaitGoSignal(env, FAST);
  expect(noToken).toMatchObject({ go: false, error: expect.stringContaining('ServiceAccount token') });

  for (const signal of [failing, untrusted, malformed, noToken]) {
    expect(JSON.stringify(signal)).not.toContain('secret-token-text');
  }
});

it('agentMain without a go signal refuses with no-go-signal and touches nothing', async () => {
  const FLAGS_ENV = path.join(dir, 'host/var/lib/kubelet/kubeadm-flags.env');
  const FLAGS = 'KUBELET_KUBEADM_ARGS="--cloud-provider=aws"\n';
  await mkdir(path.dirname(FLAGS_ENV), { recursive: true });
  await writeFile(FLAGS_ENV, FLAGS);
  const request = { op: 'set-flags', runId: 'r', kubelet: { flags: { 'cloud-provider': 'external' } } };
  handler = (_req, res) => json(res, 403, { kind: 'Status', code: 403, message: 'forbidden' });
  const commands: (readonly string[])[] = [];

  const code = await agentMain(
    {
      ...env,
      [HOST_ROOT_ENV]: path.join(dir, 'host'),
      [TERMINATION_LOG_ENV]: path.join(dir, 'termination-log'),
      [AGENT_REQUEST_ENV]: JSON.stringify(request),
    },
    async (command) => {
      commands.push(command);
      return '';
    },
    { ...FAST, deniedMs: 100 },
  );

  expect(code).toBe(1);
  const answer = AgentResultSchema.parse(
    JSON.parse(await readFile(path.join(dir, 'termination-log'), 'utf8')),
  );
  expect(answer).toMatchObject({ op: 'set-flags', ok: false, changed: false, refused: 'no-go-signal' });
  expect(answer.error).toContain('403');
  expect(commands).toEqual([]);
  expect(await readFile(FLAGS_ENV, 'utf8')).toBe(FLAGS);
  expect((await readdir(path.join(dir, 'host'), { recursive: true })).sort()).toEqual([
    'var',
    'var/lib',
    'var/lib/kubelet',
    'var/lib/kubelet/kubeadm-flags.env',
  ]);
});
