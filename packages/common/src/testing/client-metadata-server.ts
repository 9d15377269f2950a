import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCertificateAuthority, ensureSelfSignedCertificate } from '../tls.js';

/** What the server answers at one path. */
export interface ServedDocument {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON value, or a string sent as it is. */
  body: unknown;
}

/**
 * A real HTTPS server on 127.0.0.1 that serves client ID metadata documents, with a
 * certificate of its own local CA (trust `ca` to reach it). Counts the requests per path.
 */
export interface ClientMetadataServer {
  /** `https://127.0.0.1:<port>`. */
  origin: string;
  /** The CA certificate (PEM) that issued the server's certificate. */
  ca: string;
  /** Serves `document` at `path` from now on; returns the path's URL. */
  serve(path: string, document: ServedDocument): string;
  /**
   * Serves at `path` a valid document for a client called `name` with one redirect URI, its
   * own URL as `client_id`, and `extra` over those; returns the URL.
   */
  publish(
    path: string,
    client: { name: string; redirectUri: string; extra?: Record<string, unknown> },
  ): string;
  /** Requests received for `path`. */
  requests(path: string): number;
  close(): Promise<void>;
}

/**
 * The documents an authorization server must refuse, one per way the draft's rules or the
 * fetcher's bounds fail, each published on `server`: the `client_id` to try, the reason the
 * refusal must give, and whether the refusing server is one without the development allowance
 * for private addresses.
 */
export function refusedClientDocuments(
  server: ClientMetadataServer,
  redirectUri: string,
): Array<{ name: string; clientId: string; reason: string; strict: boolean }> {
  const publish = (path: string, extra?: Record<string, unknown>) =>
    server.publish(path, { name: 'Refused Client', redirectUri, extra });
  return [
    {
      name: 'an unreachable document',
      clientId: `${server.origin}/refused/missing.json`,
      reason: 'answered HTTP 404',
      strict: false,
    },
    {
      name: 'an oversized document',
      clientId: publish('/refused/big.json', {
        client_uri: `https://a.example/${'x'.repeat(6000)}`,
      }),
      reason: 'is larger than 5120 bytes',
      strict: false,
    },
    {
      name: 'a document on a private address, the development allowance off',
      clientId: publish('/refused/private.json'),
      reason: 'non-public address (127.0.0.1)',
      strict: true,
    },
    {
      name: 'a document whose client_id differs from its URL',
      clientId: publish('/refused/mismatch.json', {
        client_id: `${server.origin}/refused/other.json`,
      }),
      reason: 'names another client_id',
      strict: false,
    },
  ];
}

/**
 * Starts the server. Its certificate comes from a CA of its own, or with `caDir` from that
 * directory's CA (a development stack's data directory), so whoever trusts that CA already
 * trusts the server.
 */
export async function startClientMetadataServer(
  options: { caDir?: string } = {},
): Promise<ClientMetadataServer> {
  const dir = mkdtempSync(join(tmpdir(), 'client-metadata-'));
  const caDir = options.caDir ?? dir;
  const ca = await ensureCertificateAuthority(caDir);
  const { cert, key } = await ensureSelfSignedCertificate(dir, { caDir });
  const documents = new Map<string, ServedDocument>();
  const counts = new Map<string, number>();
  const server = createServer({ cert, key }, (request, response) => {
    const path = request.url ?? '/';
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const document = documents.get(path);
    if (document === undefined) {
      response.writeHead(404).end();
      return;
    }
    const body = typeof document.body === 'string' ? document.body : JSON.stringify(document.body);
    response
      .writeHead(document.status ?? 200, {
        'content-type': 'application/json',
        ...document.headers,
      })
      .end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serve = (path: string, document: ServedDocument) => {
    documents.set(path, document);
    return `${origin}${path}`;
  };
  return {
    origin,
    ca: ca.cert,
    serve,
    publish: (path, client) =>
      serve(path, {
        body: {
          client_id: `${origin}${path}`,
          client_name: client.name,
          redirect_uris: [client.redirectUri],
          ...client.extra,
        },
      }),
    requests: (path) => counts.get(path) ?? 0,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
