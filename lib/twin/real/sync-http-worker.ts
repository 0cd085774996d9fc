/**
 * The worker behind SyncHttpClient: it makes each HTTPS request the main thread asks for and wakes the
 * main thread, which sleeps in Atomics.wait until the answer is posted.
 */
import https from 'node:https';
import { type MessagePort, workerData } from 'node:worker_threads';
import type { SyncRequest, SyncResponse, WorkerSetup } from './sync-http.ts';

const setup = workerData as WorkerSetup;
const port = setup.port as MessagePort;
const flag = new Int32Array(setup.flag);
const agent = new https.Agent({
  keepAlive: true,
  ca: setup.tls.ca,
  cert: setup.tls.cert,
  key: setup.tls.key,
});

function answer(response: SyncResponse): void {
  port.postMessage(response);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

port.on('message', (req: SyncRequest) => {
  const body = req.body === undefined ? undefined : Buffer.from(req.body);
  const request = https.request(
    new URL(req.path, setup.baseUrl),
    {
      method: req.method,
      agent,
      timeout: req.timeoutMs,
      headers: {
        accept: 'application/json',
        ...(body
          ? { 'content-type': req.contentType ?? 'application/json', 'content-length': body.length }
          : {}),
      },
    },
    (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => answer({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', (err) => answer({ status: 0, body: '', error: err.message }));
    },
  );
  request.on('timeout', () => request.destroy(new Error(`no answer within ${req.timeoutMs} ms`)));
  request.on('error', (err) => answer({ status: 0, body: '', error: err.message }));
  request.end(body);
});
