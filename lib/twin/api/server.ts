/**
 * The twin's HTTP API server: plain node:http speaking the Kubernetes REST protocol, so that
 * @kubernetes/client-node and kubectl use it unchanged. Routing, discovery, selectors, lists, watches and
 * each verb live in their own modules; this one wires them and adds what sits in front of every request:
 * availability, injected faults and latency, counting, and the Status answer to any failure.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { TwinContext } from '../context.ts';
import { typeKey } from '../resources.ts';
import type { ObjectStore } from '../store.ts';
import { ACCESS_REVIEW_PATH, accessReview } from './access-review.ts';
import { BodyTooLargeError, MAX_BODY_BYTES, readBody } from './body.ts';
import {
  AGGREGATED_DISCOVERY_TYPE,
  aggregatedDiscovery,
  apiGroupList,
  apiResourceList,
  apiVersions,
  versionInfo,
  wantsAggregated,
} from './discovery.ts';
import { type ApiServerStats, RequestLedger, requestedName, requestFault } from './front-door.ts';
import {
  type Answer,
  createObject,
  deleteCollection,
  deleteObject,
  getObject,
  listCollection,
  patchObject,
  updateObject,
  type VerbRequest,
} from './handlers.ts';
import { listen } from './listen.ts';
import { openApi } from './openapi.ts';
import { sendJson, sendStatus, sendText } from './respond.ts';
import { type ApiVerb, parseRoute, pathNotFound, type ResourceRoute } from './route.ts';
import { serveScale } from './scale.ts';
import { type OpenWatch, startWatch } from './watch.ts';

export interface ApiServer {
  readonly url: string;
  readonly port: number;
  stats(): ApiServerStats;
  close(): Promise<void>;
}

const HANDLERS: Record<Exclude<ApiVerb, 'watch'>, (r: VerbRequest) => Answer> = {
  get: getObject,
  list: listCollection,
  create: createObject,
  update: updateObject,
  patch: patchObject,
  delete: deleteObject,
  deletecollection: deleteCollection,
};

/** How often open watches are checked against apiAvailable(). */
const WATCH_OUTAGE_CHECK_MS = 50;

export async function startApiServer(opts: {
  ctx: TwinContext;
  /** The store this server serves (the twin's components may reach it through ctx.store). */
  store: ObjectStore;
  apiAvailable: () => boolean;
  host: string;
  port: number;
}): Promise<ApiServer> {
  const { ctx, apiAvailable } = opts;
  const ledger = new RequestLedger();
  const watches = new Set<OpenWatch>();
  const openapi = openApi(ctx.spec.kubernetesVersion);
  let address = '';

  async function serveResource(
    route: ResourceRoute,
    req: IncomingMessage,
    res: ServerResponse,
    query: URLSearchParams,
  ) {
    const access = {
      verb: route.verb,
      group: route.type.group,
      resource: route.subresource ? `${route.type.plural}/${route.subresource}` : route.type.plural,
      namespace: route.namespace,
      name: requestedName(route.verb, route.name, query),
    };
    ledger.access(access);
    res.once('finish', () => ledger.answered(access, res.statusCode));
    const target = route.name
      ? { key: typeKey(route.type), namespace: route.namespace, name: route.name }
      : undefined;
    const fault = await requestFault(ctx, route.verb, route.type.plural, target);
    if (fault && 'reset' in fault) {
      req.socket.destroy();
      return;
    }
    if (fault) throw fault.error;
    if (route.verb === 'watch') {
      const watch = startWatch({
        req,
        res,
        store: opts.store,
        type: route.type,
        namespace: route.namespace,
        query,
      });
      watches.add(watch);
      void watch.ended.then(() => watches.delete(watch));
      return;
    }
    const body = route.verb === 'get' || route.verb === 'list' ? Buffer.alloc(0) : await readBody(req);
    if (route.subresource === 'scale') {
      const scaled = serveScale({
        store: opts.store,
        type: route.type,
        namespace: route.namespace ?? 'default',
        name: route.name ?? '',
        method: req.method ?? 'GET',
        contentType: req.headers['content-type'],
        body,
      });
      return sendJson(res, scaled.code, scaled.body);
    }
    const answer = HANDLERS[route.verb]({
      store: opts.store,
      route: { ...route, subresource: route.subresource },
      query,
      headers: req.headers,
      body,
    });
    // An apply that creates is authorised as create too (the patch handler's withAuthorization in
    // k8s.io/apiserver/pkg/endpoints/handlers/patch.go): a Role needs both verbs.
    if (route.verb === 'patch' && answer.code === 201) ledger.authorizedAs({ ...access, verb: 'create' });
    // Warning headers as the API server writes them (RFC 7234 code 299, agent -).
    for (const w of answer.warnings ?? []) res.appendHeader('Warning', `299 - ${JSON.stringify(w)}`);
    sendJson(res, answer.code, answer.body, answer.contentType);
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // With no kube-apiserver Ready (or in an outage window) nothing answers: the connection is dropped,
    // which is what clients of a single control plane see while its only API server restarts (connection
    // refused/reset), rather than a 503 that no real apiserver is there to send.
    if (!apiAvailable()) {
      req.socket.destroy();
      return;
    }
    ledger.request();
    const url = new URL(req.url ?? '/', 'http://twin');
    if (req.method === 'POST' && url.pathname === ACCESS_REVIEW_PATH) {
      return sendJson(res, 201, accessReview(await readBody(req), req.headers['content-type']));
    }
    const route = parseRoute(req.method ?? 'GET', url.pathname, url.searchParams);
    const aggregated = wantsAggregated(req.headers.accept);
    switch (route.kind) {
      case 'health':
        return sendText(res, 200, 'ok');
      case 'version':
        return sendJson(res, 200, versionInfo(ctx.spec.kubernetesVersion));
      case 'apiVersions':
        return aggregated
          ? sendJson(res, 200, aggregatedDiscovery(true), AGGREGATED_DISCOVERY_TYPE)
          : sendJson(res, 200, apiVersions(address));
      case 'apiGroups':
        return aggregated
          ? sendJson(res, 200, aggregatedDiscovery(false), AGGREGATED_DISCOVERY_TYPE)
          : sendJson(res, 200, apiGroupList());
      case 'resourceList':
        return sendJson(res, 200, apiResourceList(route.group, route.version));
      case 'openapiRoot':
        return sendJson(res, 200, openapi.root);
      case 'openapiDocument': {
        const doc = openapi.document(route.gv);
        if (!doc) throw pathNotFound();
        return sendJson(res, 200, doc);
      }
      case 'resource':
        return serveResource(route, req, res, url.searchParams);
    }
  }

  const server = http.createServer((req, res) => {
    serve(req, res).catch((err: unknown) => {
      if (ctx.signal.aborted || res.headersSent) {
        res.destroy();
      } else if (err instanceof BodyTooLargeError) {
        // apimachinery's NewRequestEntityTooLargeError; not a reason StatusError knows.
        const message = `Request entity too large: limit is ${MAX_BODY_BYTES}`;
        sendJson(res, 413, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message,
          reason: 'RequestEntityTooLarge',
          code: 413,
        });
      } else {
        sendStatus(res, err);
      }
    });
  });

  const bound = await listen(server, opts.port, opts.host);
  const { port } = bound;
  address = bound.address;

  const endWatches = () => {
    for (const w of watches) w.end();
  };
  ctx.signal.addEventListener('abort', endWatches, { once: true });
  // An API server that goes away takes its watches with it. One check for the whole server (not one
  // per watch): while the API is unavailable, open watches are cut, and their clients re-list later.
  const outageCheck = setInterval(() => {
    if (watches.size > 0 && !apiAvailable()) for (const w of watches) w.drop();
  }, WATCH_OUTAGE_CHECK_MS);
  outageCheck.unref();

  let closed: Promise<void> | undefined;
  return {
    url: `http://${address}`,
    port,
    stats: () => ledger.stats(),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        ctx.signal.removeEventListener('abort', endWatches);
        clearInterval(outageCheck);
        endWatches();
        server.close(() => resolve());
        // Keep-alive sockets and requests still waiting out an injected latency go now.
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
