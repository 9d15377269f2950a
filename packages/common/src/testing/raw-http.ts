import { connect } from 'node:net';
import { UnavailableError } from '../errors.js';

/**
 * Sends `request` byte for byte (latin1) on a new connection to `url`'s host and port, and
 * resolves with the status of the answer once the server closes the connection (0 when no
 * status line came back). For requests an HTTP client would refuse to send or would rewrite:
 * malformed `Host` headers, hop-by-hop headers out of place, HTTP/1.0. The request must ask for
 * `connection: close` (the server's close ends the wait); no answer within `timeoutMs` rejects.
 */
export function rawHttpStatus(url: string, request: string, timeoutMs = 10_000): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.setTimeout(timeoutMs, () => socket.destroy(new UnavailableError('no answer')));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
    });
    socket.on('end', () => resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
    // Written, not ended: a server may drop a request whose client has half-closed before the
    // answer is ready (the gateway's waits on its upstream).
    socket.write(request, 'latin1');
  });
}
