import { Agent, type IncomingHttpHeaders, request } from 'node:http';
import { InvalidArgumentError } from '../errors.js';

/**
 * `count` loopback addresses for tests that need many clients: each in a /24 of its own
 * (`127.<block>.<n>.1`, moving to the next block every 256), or with `sameNetwork` all in
 * `127.<block>.0.0/24` (at most 254). On Linux every address of 127.0.0.0/8 is the loopback
 * interface, so a client can send from any of them with no setup.
 */
export function loopbackAddresses(
  count: number,
  options: { block?: number; sameNetwork?: boolean } = {},
): string[] {
  const block = options.block ?? 1;
  if (options.sameNetwork && count > 254) throw new InvalidArgumentError('a /24 holds 254 hosts');
  return Array.from({ length: count }, (_, n) =>
    options.sameNetwork
      ? `127.${block}.0.${n + 1}`
      : `127.${block + Math.floor(n / 256)}.${n % 256}.1`,
  );
}

export type LoopbackResponse = { status: number; headers: IncomingHttpHeaders; text: string };

/** An HTTP/1.1 client whose keep-alive connections leave from one local address. */
export type LoopbackClient = {
  address: string;
  send(
    url: string,
    init?: { method?: string; headers?: Record<string, string>; body?: string },
  ): Promise<LoopbackResponse>;
  close(): void;
};

/** A client sending from `localAddress` (see `loopbackAddresses`); redirects are not followed. */
export function loopbackClient(localAddress: string): LoopbackClient {
  const agent = new Agent({ keepAlive: true, localAddress });
  return {
    address: localAddress,
    send: (url, init = {}) =>
      new Promise((resolve, reject) => {
        const outgoing = request(
          url,
          { agent, method: init.method ?? 'GET', headers: init.headers ?? {} },
          (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => {
              text += chunk;
            });
            response.on('end', () =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
            );
            response.on('error', reject);
          },
        );
        outgoing.on('error', reject);
        outgoing.end(init.body);
      }),
    close: () => agent.destroy(),
  };
}
