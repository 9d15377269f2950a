import { once } from 'node:events';
import type { AddressInfo, Server } from 'node:net';

/**
 * What every server of the kit does once built: listens on an ephemeral loopback port, exits on
 * SIGTERM (how `spawnKitServer` stops it; open connections are not waited for, nothing of a
 * benchmark's server outlives its measurement), and resolves with the URL of `path` there.
 */
export async function listenOnLoopback(server: Server, path: string): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.once('SIGTERM', () => process.exit(0));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
}
