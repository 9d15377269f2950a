/**
 * A lower bound for `bench:gateway --lower-bounds`: the least HTTP/1.1 a Node.js proxy can read,
 * written by hand on `node:net`. It finds where each message ends by its Content-Length, copies
 * the head with the connection's own fields (RFC 9110 §7.6.1) left out, and reuses upstream
 * connections; it checks nothing else (no chunked bodies, no header validation, no limits), so it
 * is a measurement and never a proxy to run. What it costs above the TCP relay is the price of
 * HTTP framing in JavaScript, before any library or policy. Started as its own process by
 * `spawnBareHttpRelay`; prints its URL on stdout.
 */
import { connect, createServer, type Socket } from 'node:net';
import { listenOnLoopback } from './loopback.js';

const upstream = new URL(process.argv[2] as string);
const HEAD_END = Buffer.from('\r\n\r\n');
/** Fields the relay writes itself or that name the connection, not the message. */
const OWN_FIELDS = /^(connection|keep-alive|transfer-encoding|host|content-length):/i;

interface Message {
  /** The start line and field lines, without the blank line. */
  lines: string[];
  body: Buffer;
}

/**
 * Reads whole messages off a socket: `onMessage` gets each one as soon as its Content-Length
 * bytes are in.
 */
function readMessages(socket: Socket, onMessage: (message: Message) => void): void {
  let pending: Buffer | undefined;
  socket.on('data', (chunk: Buffer) => {
    let buffer = pending ? Buffer.concat([pending, chunk]) : chunk;
    pending = undefined;
    for (;;) {
      const headEnd = buffer.indexOf(HEAD_END);
      const lines = headEnd < 0 ? [] : buffer.toString('latin1', 0, headEnd).split('\r\n');
      const length = lines.find((line: string) => /^content-length:/i.test(line));
      const bodyStart = headEnd + HEAD_END.length;
      const end = bodyStart + (length ? Number(length.slice(length.indexOf(':') + 1)) : 0);
      if (headEnd < 0 || buffer.length < end) {
        pending = buffer;
        return;
      }
      onMessage({ lines, body: buffer.subarray(bodyStart, end) });
      if (end === buffer.length) return;
      buffer = buffer.subarray(end);
    }
  });
}

/** Writes a message in one system call. */
function send(socket: Socket, head: string, body: Buffer): void {
  socket.cork();
  socket.write(head);
  socket.write(body);
  socket.uncork();
}

/** The message's head with the relay's own framing, ready to write. */
function head(startLine: string, message: Message, host?: string): string {
  let text = `${startLine}\r\n${host === undefined ? '' : `host: ${host}\r\n`}`;
  for (let i = 1; i < message.lines.length; i++) {
    const line = message.lines[i] as string;
    if (!OWN_FIELDS.test(line)) text += `${line}\r\n`;
  }
  return `${text}content-length: ${message.body.length}\r\n\r\n`;
}

/** Upstream connections with no request on them. */
const idle: Socket[] = [];
/** Per busy upstream connection, the client connection whose request it carries. */
const carrying = new Map<Socket, Socket>();

function upstreamConnection(): Socket {
  const socket = connect(Number(upstream.port), upstream.hostname);
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  // The upstream closes idle connections (its keep-alive timeout): such a one is never reused,
  // and a client whose request was on it loses its connection rather than wait for ever.
  socket.once('close', () => {
    const at = idle.indexOf(socket);
    if (at >= 0) idle.splice(at, 1);
    carrying.get(socket)?.destroy();
    carrying.delete(socket);
  });
  readMessages(socket, (response) => {
    const client = carrying.get(socket);
    carrying.delete(socket);
    idle.push(socket);
    if (client) send(client, head(response.lines[0] as string, response), response.body);
  });
  return socket;
}

const server = createServer((client) => {
  client.setNoDelay(true);
  client.on('error', () => client.destroy());
  readMessages(client, (request) => {
    const method = (request.lines[0] as string).split(' ', 1)[0];
    const socket = idle.pop() ?? upstreamConnection();
    carrying.set(socket, client);
    send(
      socket,
      head(`${method} ${upstream.pathname} HTTP/1.1`, request, upstream.host),
      request.body,
    );
  });
});
console.log(await listenOnLoopback(server, upstream.pathname));
