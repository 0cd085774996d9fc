/**
 * The network between a twin's users and its nodes' own addresses, as a SOCKS5 proxy (RFC 1928, CONNECT
 * only, no authentication): a kubeconfig whose server is one control-plane node's address, as kubeadm's
 * admin.conf names one, reaches it through this proxy (the kubeconfig's proxy-url, as through a bastion's
 * `ssh -D`). A connection to a node's kube-apiserver port goes through to the twin's API server while that
 * node's kube-apiserver is up; while it is not (restarting after a manifest edit, an outage window) the
 * connection is refused, and one already open is cut. So a client pinned to one node sees that node's
 * restarts, not the cluster's.
 */
import net, { type Socket } from 'node:net';
import { listen } from './listen.ts';

/** What a connection to host:port meets: the API server, a closed port, or no host at that address. */
export type NodeAnswer = 'open' | 'refused' | 'unreachable';

export interface NodeNetwork {
  /** `socks5://host:port`, for a kubeconfig's proxy-url. */
  readonly url: string;
  close(): Promise<void>;
}

/** How often open tunnels are checked against their node's answer (as the front proxy checks outages). */
const CHECK_MS = 50;

const VERSION = 5;
const NO_AUTH = 0;
const NO_ACCEPTABLE_METHOD = 0xff;
const CONNECT = 1;
const REPLY = { ok: 0, hostUnreachable: 4, refused: 5, commandNotSupported: 7, addressNotSupported: 8 };

/** Bytes arriving on a socket, read in exact amounts. */
class Reader {
  #buffered = Buffer.alloc(0);
  #waiting: (() => void) | undefined;
  #ended = false;

  constructor(socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#buffered = Buffer.concat([this.#buffered, chunk]);
      this.#waiting?.();
    });
    const end = (): void => {
      this.#ended = true;
      this.#waiting?.();
    };
    socket.on('end', end);
    socket.on('close', end);
  }

  async take(n: number): Promise<Buffer> {
    while (this.#buffered.length < n) {
      if (this.#ended) throw new Error('the client went away mid-handshake');
      await new Promise<void>((resolve) => {
        this.#waiting = resolve;
      });
      this.#waiting = undefined;
    }
    const out = this.#buffered.subarray(0, n);
    this.#buffered = this.#buffered.subarray(n);
    return out;
  }

  /** What came after the handshake (the start of the tunnelled stream). */
  rest(): Buffer {
    return this.#buffered;
  }
}

function ipv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(':');
}

/** The CONNECT request's destination, or the reply code that refuses the request. */
async function readRequest(reader: Reader): Promise<{ host: string; port: number } | { refuse: number }> {
  const [version, command, , type] = await reader.take(4);
  if (version !== VERSION || command !== CONNECT) return { refuse: REPLY.commandNotSupported };
  let host: string;
  if (type === 1) host = [...(await reader.take(4))].join('.');
  else if (type === 3) host = (await reader.take((await reader.take(1))[0] as number)).toString('latin1');
  else if (type === 4) host = ipv6(await reader.take(16));
  else return { refuse: REPLY.addressNotSupported };
  return { host, port: (await reader.take(2)).readUInt16BE(0) };
}

function reply(socket: Socket, code: number): void {
  // BND.ADDR/BND.PORT: 0.0.0.0:0, which clients of a CONNECT ignore.
  socket.write(Buffer.from([VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]));
}

export async function startNodeNetwork(opts: {
  /** What a connection to host:port meets now. */
  answer: (host: string, port: number) => NodeAnswer;
  /** Where an open node address leads: the twin's API server. */
  upstream: { readonly host: string; readonly port: number };
  host: string;
}): Promise<NodeNetwork> {
  /** Open tunnels and the address each reached. */
  const tunnels = new Map<Socket, { host: string; port: number; upstream: Socket }>();

  async function handshake(client: Socket): Promise<void> {
    const reader = new Reader(client);
    const [version, count] = await reader.take(2);
    const methods = await reader.take(count as number);
    if (version !== VERSION || !methods.includes(NO_AUTH)) {
      client.end(Buffer.from([VERSION, NO_ACCEPTABLE_METHOD]));
      return;
    }
    client.write(Buffer.from([VERSION, NO_AUTH]));
    const request = await readRequest(reader);
    if ('refuse' in request) {
      reply(client, request.refuse);
      client.end();
      return;
    }
    const answer = opts.answer(request.host, request.port);
    if (answer !== 'open') {
      reply(client, answer === 'refused' ? REPLY.refused : REPLY.hostUnreachable);
      client.end();
      return;
    }
    const upstream = net.connect(opts.upstream.port, opts.upstream.host);
    upstream.once('connect', () => {
      client.removeAllListeners('data');
      reply(client, REPLY.ok);
      const early = reader.rest();
      if (early.length > 0) upstream.write(early);
      tunnels.set(client, { ...request, upstream });
      client.pipe(upstream);
      upstream.pipe(client);
    });
    const close = (): void => {
      tunnels.delete(client);
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', close);
    upstream.on('close', close);
    client.on('close', close);
  }

  const server = net.createServer((client) => {
    client.on('error', () => client.destroy());
    handshake(client).catch(() => client.destroy());
  });
  const { address } = await listen(server, 0, opts.host);
  const check = setInterval(() => {
    for (const [client, t] of tunnels) {
      if (opts.answer(t.host, t.port) === 'open') continue;
      // The node's API server went away under the connection: the client sees it reset.
      client.resetAndDestroy();
      t.upstream.destroy();
      tunnels.delete(client);
    }
  }, CHECK_MS);
  check.unref();

  let closed: Promise<void> | undefined;
  return {
    url: `socks5://${address}`,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        clearInterval(check);
        for (const [client, t] of tunnels) {
          client.destroy();
          t.upstream.destroy();
        }
        tunnels.clear();
        server.close(() => resolve());
      });
      return closed;
    },
  };
}
