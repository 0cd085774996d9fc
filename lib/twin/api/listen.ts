/** Start a server listening, for the twin's API server and its real-API proxy alike. */
import type { AddressInfo, Server } from 'node:net';

/** Listen on host:port (0: a free one); resolves to the port and `host:port` as a URL writes it. */
export async function listen(
  server: Server,
  port: number,
  host: string,
): Promise<{ port: number; address: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const hostForUrl = host.includes(':') ? `[${host}]` : host;
  return { port: bound, address: `${hostForUrl}:${bound}` };
}
