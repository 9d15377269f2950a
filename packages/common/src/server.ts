import type { AddressInfo } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { installSignalHandlers, onShutdown } from './shutdown.js';

export interface ListenOptions {
  /** Interface to bind; default 127.0.0.1 (least exposure). */
  host?: string;
  /** TCP port; 0 picks a free one. Default 0. */
  port?: number;
  /** Close gracefully on SIGINT/SIGTERM and exit. Default true. */
  handleSignals?: boolean;
  /**
   * How long `close` lets open connections finish before cutting them. Default 5 s. Some
   * never become idle on their own: long-lived MCP streams, and sockets a browser opened in
   * advance that never carried a request.
   */
  closeGraceMs?: number;
}

export interface RunningServer {
  /** Base URL clients use, e.g. `https://localhost:8443`. */
  url: string;
  host: string;
  port: number;
  /** Stops accepting connections and resolves once in-flight requests have finished. */
  close(): Promise<void>;
}

export async function startServer(
  app: FastifyInstance,
  options: ListenOptions = {},
): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  await app.listen({ host, port: options.port ?? 0 });
  const { port } = app.server.address() as AddressInfo;
  const scheme = app.server instanceof TlsServer ? 'https' : 'http';
  const url = `${scheme}://${urlHost(host)}:${port}`;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const cut = setTimeout(() => app.server.closeAllConnections(), options.closeGraceMs ?? 5000);
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
        unregister();
      }
    })();
    return closing;
  };
  const unregister = onShutdown(close);
  if (options.handleSignals ?? true) installSignalHandlers({ logger: app.log });
  return { url, host, port, close };
}

/** The host part of a URL for a bound interface: wildcards become loopback names. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
