/**
 * The address a real-API twin's users reach: an HTTPS proxy before kube-apiserver that adds what the twin
 * adds to its own server (ADR 0005). It serves the API server's certificate, asks for a client
 * certificate of the cluster CA, and passes the caller on as kube-apiserver's front-proxy authentication
 * expects (X-Remote-User / X-Remote-Group from the certificate's CN and O, the connection made with the
 * front-proxy client certificate), so RBAC judges the caller, not the proxy. A bearer token goes through
 * untouched for kube-apiserver to authenticate.
 *
 * In front of that: the twin's availability (no kube-apiserver static pod Ready, or an outage window: the
 * connection is dropped, open watches cut), the injected faults and latency, and the request ledger.
 */
import type http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { RequestLedger, requestFault } from '../api/front-door.ts';
import { listen } from '../api/listen.ts';
import { sendStatus } from '../api/respond.ts';
import type { ApiServer } from '../api/server.ts';
import type { TwinContext } from '../context.ts';
import { StatusError } from '../errors.ts';
import { findByPlural, typeKey } from '../resources.ts';
import type { ClusterPki } from './pki.ts';
import { requestInfo } from './request-info.ts';

/** How often open exchanges are checked against apiAvailable() (as the in-process server checks watches). */
const OUTAGE_CHECK_MS = 50;

/** Headers that describe one hop, or that only the proxy may set. */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'te',
  'trailer',
]);

function forwardedHeaders(incoming: IncomingHttpHeaders, socket: TLSSocket): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || HOP.has(name) || name.startsWith('x-remote-')) continue;
    out[name] = value;
  }
  if (incoming['transfer-encoding']) out['transfer-encoding'] = incoming['transfer-encoding'];
  const cert = socket.getPeerCertificate();
  if (cert && Object.keys(cert).length > 0 && socket.authorized) {
    out['x-remote-user'] = cert.subject.CN;
    const orgs = cert.subject.O;
    if (orgs) out['x-remote-group'] = Array.isArray(orgs) ? orgs : [orgs];
  }
  return out;
}

export async function startFrontProxy(opts: {
  ctx: TwinContext;
  /** kube-apiserver's own https:// address. */
  upstream: string;
  pki: ClusterPki;
  /** The serving certificate users see: it names the addresses they reach the twin at. */
  serving: { readonly cert: string; readonly key: string };
  apiAvailable: () => boolean;
  host: string;
  port: number;
}): Promise<ApiServer> {
  const { ctx, apiAvailable, pki } = opts;
  const ledger = new RequestLedger();
  const upstreamAgent = new https.Agent({ keepAlive: true, ...pki.frontProxyClient });
  /** Client sockets with a request in flight: an outage cuts them (a watch is one long request). */
  const inFlight = new Set<Socket>();

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const socket = req.socket as TLSSocket;
    if (!apiAvailable()) {
      socket.destroy();
      return;
    }
    // A certificate that is not the cluster CA's is refused, as kube-apiserver's TLS handshake refuses it.
    const cert = socket.getPeerCertificate();
    if (cert && Object.keys(cert).length > 0 && !socket.authorized) {
      sendStatus(res, new StatusError('Unauthorized', 'Unauthorized'));
      return;
    }
    ledger.request();
    const url = new URL(req.url ?? '/', 'https://twin');
    const info = requestInfo(req.method ?? 'GET', url);
    if (info) {
      const { access } = info;
      ledger.access(access);
      res.once('finish', () => ledger.answered(access, res.statusCode));
      const plural = access.resource.split('/')[0] as string;
      const type = findByPlural(access.group, info.version, plural);
      const target =
        type && info.name ? { key: typeKey(type), namespace: access.namespace, name: info.name } : undefined;
      const fault = await requestFault(ctx, access.verb, plural, target);
      if (fault && 'reset' in fault) {
        socket.destroy();
        return;
      }
      if (fault) {
        sendStatus(res, fault.error);
        return;
      }
    }
    inFlight.add(socket);
    const done = (): void => {
      inFlight.delete(socket);
    };
    const upstream = https.request(new URL(req.url ?? '/', opts.upstream), {
      method: req.method,
      headers: forwardedHeaders(req.headers, socket),
      agent: upstreamAgent,
    });
    upstream.on('response', (answer) => {
      const headers = { ...answer.headers };
      for (const h of HOP) if (h !== 'transfer-encoding') delete headers[h];
      res.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(res);
      answer.on('end', done);
      answer.on('error', () => socket.destroy());
    });
    upstream.on('error', () => {
      done();
      socket.destroy();
    });
    res.on('close', () => {
      done();
      upstream.destroy();
    });
    req.pipe(upstream);
  }

  const server = https.createServer(
    {
      cert: opts.serving.cert,
      key: opts.serving.key,
      ca: pki.caCert,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      serve(req, res).catch((err: unknown) => {
        if (ctx.signal.aborted || res.headersSent) res.destroy();
        else sendStatus(res, err);
      });
    },
  );
  const { port, address } = await listen(server, opts.port, opts.host);
  const outageCheck = setInterval(() => {
    if (inFlight.size > 0 && !apiAvailable()) for (const s of inFlight) s.destroy();
  }, OUTAGE_CHECK_MS);
  outageCheck.unref();

  let closed: Promise<void> | undefined;
  return {
    url: `https://${address}`,
    port,
    stats: () => ledger.stats(),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        clearInterval(outageCheck);
        server.close(() => resolve());
        server.closeAllConnections();
        upstreamAgent.destroy();
      });
      return closed;
    },
  };
}
