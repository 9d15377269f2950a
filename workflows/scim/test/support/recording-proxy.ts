import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request that went through the proxy, as the identity provider received it. */
export type RecordedRequest = {
  method: string;
  /** Path and query, e.g. `/scim2/Users/abc`. */
  path: string;
  /** The body as sent, with any `client_secret` form field blanked. */
  body: string;
  /** How a token request authenticated the client, and as whom (never the secret). */
  clientAuth?: { method: 'basic' | 'post'; clientId: string };
  /** For an API call with a JWT bearer token: its `scope` claim and a digest telling tokens apart. */
  bearer?: { scopes: string[]; digest: string };
  status: number;
};

/** A token request, decoded from its form body. */
export type TokenRequest = RecordedRequest & { grantType: string | null; scopes: string[] };

export type RecordingProxy = {
  url: string;
  requests: RecordedRequest[];
  /** Requests to `/oauth2/token`, with their grant type and requested scopes. */
  tokenRequests(): TokenRequest[];
  /** Non-token requests (the API calls), optionally only one method. */
  apiRequests(method?: string): RecordedRequest[];
  /** Forgets what was recorded so far. */
  reset(): void;
  close(): Promise<void>;
};

// Hop-by-hop and length/encoding headers are recomputed by each side of the proxy.
const DROPPED_REQUEST_HEADERS = new Set(['host', 'connection', 'content-length', 'keep-alive']);
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'keep-alive',
]);

const isTokenPath = (path: string) => path.split('?')[0] === '/oauth2/token';

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function clientAuth(
  header: string | undefined,
  form: URLSearchParams,
): RecordedRequest['clientAuth'] {
  if (header?.startsWith('Basic ')) {
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    return {
      method: 'basic',
      clientId: decodeURIComponent(decoded.slice(0, decoded.indexOf(':'))),
    };
  }
  const clientId = form.get('client_id');
  return clientId && form.has('client_secret') ? { method: 'post', clientId } : undefined;
}

function bearer(header: string | undefined): RecordedRequest['bearer'] {
  if (!header?.startsWith('Bearer ')) return undefined;
  const token = header.slice(7);
  let scope: unknown;
  try {
    scope = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')).scope;
  } catch {
    return undefined; // not a JWT: nothing to inspect
  }
  return {
    scopes: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [],
    digest: createHash('sha256').update(token).digest('hex').slice(0, 16),
  };
}

/** Keeps secrets out of the recording (and so out of any assertion message). */
function redactSecret(form: URLSearchParams): string {
  if (form.has('client_secret')) form.set('client_secret', '[redacted]');
  return form.toString();
}

/**
 * A reverse proxy in front of the identity provider that records every request: the embedded
 * IdP has no request hooks, and the tests must count token requests and PATCHes exactly as
 * they arrive.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const requests: RecordedRequest[] = [];
  const forward = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined || DROPPED_REQUEST_HEADERS.has(name)) continue;
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const method = request.method ?? 'GET';
    const upstream = await fetch(`${target}${request.url ?? '/'}`, {
      method,
      headers,
      body: method === 'GET' || method === 'HEAD' ? undefined : body,
    });
    const payload = Buffer.from(await upstream.arrayBuffer());
    const path = request.url ?? '/';
    const text = body.toString('utf8');
    const form = isTokenPath(path) ? new URLSearchParams(text) : undefined;
    requests.push({
      method,
      path,
      body: form ? redactSecret(new URLSearchParams(text)) : text,
      ...(form
        ? { clientAuth: clientAuth(request.headers.authorization, form) }
        : { bearer: bearer(request.headers.authorization) }),
      status: upstream.status,
    });
    upstream.headers.forEach((value, name) => {
      if (!DROPPED_RESPONSE_HEADERS.has(name)) response.setHeader(name, value);
    });
    response.writeHead(upstream.status);
    response.end(payload);
  };
  const server = createServer((request, response) => {
    forward(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const isToken = (r: RecordedRequest) => isTokenPath(r.path);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    tokenRequests: () =>
      requests.filter(isToken).map((r) => {
        const form = new URLSearchParams(r.body);
        const scope = form.get('scope');
        return {
          ...r,
          grantType: form.get('grant_type'),
          scopes: scope ? scope.split(' ').filter(Boolean) : [],
        };
      }),
    apiRequests: (method) =>
      requests.filter((r) => !isToken(r) && (method === undefined || r.method === method)),
    reset: () => {
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
