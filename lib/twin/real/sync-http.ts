/**
 * A synchronous HTTPS client: the caller's thread blocks until the answer is there. The twin's simulated
 * components were written against a store whose writes take effect before the call returns (ADR 0001);
 * on a real API server they keep that contract by blocking on each write. A worker thread makes the
 * request; the caller sleeps in Atomics.wait and takes the answer with receiveMessageOnPort.
 *
 * Blocking is safe because nothing the request waits for runs on the blocked thread: kube-apiserver and
 * etcd are processes of their own, and the twin's requests go to kube-apiserver directly, not through
 * the proxy that shares this thread.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { moduleUrl } from '../../package-root.ts';

export interface ClientTls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export interface SyncRequest {
  readonly method: string;
  /** Path and query, e.g. `/api/v1/namespaces/default/pods`. */
  readonly path: string;
  readonly body?: string;
  readonly contentType?: string;
  readonly timeoutMs: number;
}

export interface SyncResponse {
  /** 0 when no HTTP answer came (connection refused, reset, timed out): `error` says why. */
  readonly status: number;
  readonly body: string;
  readonly error?: string;
}

/** What the worker is started with (shared with sync-http-worker.ts). */
export interface WorkerSetup {
  readonly baseUrl: string;
  readonly tls: ClientTls;
  readonly flag: SharedArrayBuffer;
  readonly port: MessagePort;
}

/** Longest a request may take before the caller gives up on it. */
const DEFAULT_TIMEOUT_MS = 15_000;

export class SyncHttpClient {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #flag: Int32Array;

  constructor(baseUrl: string, tls: ClientTls) {
    const shared = new SharedArrayBuffer(4);
    this.#flag = new Int32Array(shared);
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    const setup: WorkerSetup = { baseUrl, tls, flag: shared, port: port2 };
    this.#worker = new Worker(moduleUrl(import.meta.url, './sync-http-worker'), {
      workerData: setup,
      transferList: [port2],
    });
    this.#worker.unref();
    this.#port.unref();
  }

  request(req: Omit<SyncRequest, 'timeoutMs'> & { timeoutMs?: number }): SyncResponse {
    const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    Atomics.store(this.#flag, 0, 0);
    this.#port.postMessage({ ...req, timeoutMs } satisfies SyncRequest);
    // The worker's own timeout answers first; this bound only guards against a dead worker.
    if (Atomics.wait(this.#flag, 0, 0, timeoutMs + 5_000) === 'timed-out') {
      return { status: 0, body: '', error: `the request worker did not answer within ${timeoutMs} ms` };
    }
    const message = receiveMessageOnPort(this.#port);
    if (!message) return { status: 0, body: '', error: 'the request worker woke without an answer' };
    return message.message as SyncResponse;
  }

  async close(): Promise<void> {
    this.#port.close();
    await this.#worker.terminate();
  }
}
