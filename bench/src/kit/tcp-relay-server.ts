/**
 * A lower bound for `bench:gateway --lower-bounds`: a Node.js relay that moves bytes between each
 * client connection and an upstream connection of its own and reads none of them, no HTTP at all.
 * What it costs is what Node.js's event loop and sockets cost, to set beside nginx as a proxy.
 * Started as its own process by `spawnTcpRelay`; prints its URL on stdout.
 */
import { connect, createServer } from 'node:net';
import { listenOnLoopback } from './loopback.js';

const upstream = new URL(process.argv[2] as string);

const server = createServer((client) => {
  const toUpstream = connect(Number(upstream.port), upstream.hostname);
  client.setNoDelay(true);
  toUpstream.setNoDelay(true);
  client.pipe(toUpstream).pipe(client);
  client.once('close', () => toUpstream.destroy());
  toUpstream.once('close', () => client.destroy());
  client.on('error', () => toUpstream.destroy());
  toUpstream.on('error', () => client.destroy());
});
console.log(await listenOnLoopback(server, upstream.pathname));
