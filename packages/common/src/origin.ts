import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidArgumentError } from './errors.js';

/**
 * Origin validation against DNS rebinding (MCP transports, "Security Warning": servers must
 * validate Origin and answer 403 when it is present and not allowed) and CORS for the
 * endpoints browser-based MCP clients read (discovery, registration, token, MCP).
 */

export interface OriginPolicyOptions {
  /** Further origins a browser page may call from, e.g. `https://inspector.example.com`. */
  allowedOrigins?: readonly string[];
  /** The service's own public origins (from its public URL); always allowed. */
  ownOrigins: readonly string[];
}

export interface OriginPolicy {
  /**
   * Whether a request with this `Origin` header may be served. No Origin (a non-browser
   * client) is allowed. The `Host` header never makes an origin acceptable: under DNS
   * rebinding it names the attacker's host, exactly like the Origin does.
   */
  check(origin: string | undefined, host: string | undefined): boolean;
  /** The allowed origins besides loopback, normalised (`scheme://host[:port]`). */
  readonly origins: ReadonlySet<string>;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** `scheme://host[:port]` of an http(s) URL or origin, or undefined when it is none. */
export function normalizeOrigin(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '') return undefined;
  return url.origin;
}

/** Whether an origin is http(s) on localhost, 127.0.0.1 or [::1], any port. */
export function isLoopbackOrigin(origin: string): boolean {
  const normalized = normalizeOrigin(origin);
  return normalized !== undefined && LOOPBACK_HOSTS.has(new URL(normalized).hostname);
}

function originSet(values: readonly string[], option: string): Set<string> {
  const set = new Set<string>();
  for (const value of values) {
    const normalized = normalizeOrigin(value);
    if (normalized === undefined) {
      throw new InvalidArgumentError(
        `${option}: ${JSON.stringify(value)} is not an http(s) origin such as https://app.example.com`,
      );
    }
    set.add(normalized);
  }
  return set;
}

/**
 * The allow-list: the service's own origins, `allowedOrigins`, and loopback origins on any
 * port. An Origin of `null` (sandboxed frames, `file:` pages) or anything unparsable is refused.
 */
export function createOriginPolicy(options: OriginPolicyOptions): OriginPolicy {
  const origins = new Set([
    ...originSet(options.ownOrigins, 'ownOrigins'),
    ...originSet(options.allowedOrigins ?? [], 'allowedOrigins'),
  ]);
  return {
    origins,
    check(origin: string | undefined, _host: string | undefined): boolean {
      if (origin === undefined) return true;
      const normalized = normalizeOrigin(origin);
      if (normalized === undefined) return false;
      return origins.has(normalized) || isLoopbackOrigin(normalized);
    },
  };
}

export const CORS_ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'Last-Event-ID',
  // MCP 2026-07-28 Streamable HTTP, "Standard Request Headers".
  'Mcp-Method',
  'Mcp-Name',
] as const;

/** A field name (RFC 9110 §5.1: `1*tchar`), e.g. the `{Name}` of `Mcp-Param-{Name}` (2026-07-28). */
export const FIELD_NAME_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const MCP_PARAM_PREFIX = 'mcp-param-';

function isMcpParamHeader(name: string): boolean {
  return (
    name.slice(0, MCP_PARAM_PREFIX.length).toLowerCase() === MCP_PARAM_PREFIX &&
    FIELD_NAME_TOKEN.test(name.slice(MCP_PARAM_PREFIX.length))
  );
}

/**
 * The `Mcp-Param-*` names a preflight asks for (`Access-Control-Request-Headers`): a modern
 * client mirrors tool parameters into headers whose names only the server's tool definitions
 * know, so a fixed list cannot allow them. Only names of that shape are echoed back.
 */
function requestedParamHeaders(requested: string | undefined): string {
  if (requested === undefined) return '';
  let out = '';
  for (const item of requested.split(',')) {
    const name = item.trim();
    if (isMcpParamHeader(name)) out += `, ${name}`;
  }
  return out;
}
export const CORS_EXPOSE_HEADERS = [
  'WWW-Authenticate',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
] as const;

export interface CorsOptions {
  policy: OriginPolicy;
  /**
   * Paths that get CORS, as the router matched them (`request.routeOptions.url`, prefix
   * included); a preflight without an OPTIONS route is matched on its decoded path.
   */
  paths: readonly string[];
  /** Methods a preflight may ask for. Default GET, POST, DELETE. */
  methods?: readonly string[];
  /** How long a browser may cache a preflight answer. Default 600 s. */
  maxAgeSeconds?: number;
}

function requestPath(request: FastifyRequest): string {
  const path = request.url.split('?')[0] ?? '';
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** How `applyCors` leaves a request: go on serving it, or answer its preflight. */
export type CorsOutcome = 'serve' | 'preflight-allowed' | 'preflight-refused';

/** Where CORS response headers go: a `ServerResponse`, or anything that writes them with the answer. */
export interface CorsHeaderTarget {
  setHeader(name: string, value: string): unknown;
}

/** The body of the 403 answering a preflight from an Origin that is not allowed. */
export const CORS_PREFLIGHT_REFUSED = { error: 'forbidden', message: 'Origin not allowed.' };

/**
 * CORS on node:http objects, for one set of options (`paths` aside: the caller has decided the
 * path gets CORS). A request with an allowed Origin gets `Access-Control-Allow-Origin` (echoed)
 * and `Access-Control-Expose-Headers`, set on the response before anything else is written so
 * that every later answer keeps them (a 401 with `WWW-Authenticate` must stay readable). For a
 * preflight the outcome says how to answer it — 204 (its headers already set) for an allowed
 * Origin, 403 otherwise — before any authentication. It never refuses a non-preflight request:
 * enforcing the Origin is the service's decision, in its own error shape.
 */
export function createCors(options: Omit<CorsOptions, 'paths'>) {
  const methods = (options.methods ?? ['GET', 'POST', 'DELETE']).join(', ');
  const maxAge = String(options.maxAgeSeconds ?? 600);
  const allowHeaders = CORS_ALLOW_HEADERS.join(', ');
  const exposeHeaders = CORS_EXPOSE_HEADERS.join(', ');

  return function applyCors(
    method: string,
    headers: IncomingHttpHeaders,
    response: CorsHeaderTarget,
  ): CorsOutcome {
    response.setHeader('vary', 'Origin');
    const origin = headerValue(headers.origin);
    const allowed = origin !== undefined && options.policy.check(origin, headerValue(headers.host));
    if (allowed) {
      response.setHeader('access-control-allow-origin', origin);
      response.setHeader('access-control-expose-headers', exposeHeaders);
    }
    if (!isPreflight(method, headers)) return 'serve';
    if (!allowed) return 'preflight-refused';
    response.setHeader('access-control-allow-methods', methods);
    const requested = headerValue(headers['access-control-request-headers']);
    response.setHeader(
      'access-control-allow-headers',
      allowHeaders + requestedParamHeaders(requested),
    );
    response.setHeader('access-control-max-age', maxAge);
    return 'preflight-allowed';
  };
}

/** A CORS preflight (Fetch standard): OPTIONS naming the method it asks for. */
function isPreflight(method: string, headers: IncomingHttpHeaders): boolean {
  return method === 'OPTIONS' && headers['access-control-request-method'] !== undefined;
}

/**
 * An `onRequest` hook implementing `createCors` on `paths`; it answers preflights itself. Add
 * the hook before the hooks whose answers browsers must be able to read.
 */
export function createCorsHook(options: CorsOptions) {
  const paths = new Set(options.paths);
  const applyCors = createCors(options);

  return async function corsHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const route = request.routeOptions.url;
    if (
      !paths.has(route ?? '') &&
      !(isPreflight(request.method, request.headers) && paths.has(requestPath(request)))
    ) {
      return;
    }
    const outcome = applyCors(request.method, request.headers, reply.raw);
    if (outcome === 'preflight-refused') await reply.code(403).send(CORS_PREFLIGHT_REFUSED);
    else if (outcome === 'preflight-allowed') await reply.code(204).send();
  };
}
