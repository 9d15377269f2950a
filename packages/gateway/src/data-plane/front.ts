import {
  type AppState,
  CORS_PREFLIGHT_REFUSED,
  createCors,
  errorReplyBody,
  type FrontHandler,
  jsonRpcError,
  type Logger,
  type OriginPolicy,
  tracingEnabled,
} from '@mcp-identity/common';
import type { LogLevel } from 'fastify';
import type { GatewayMetrics } from '../metrics.js';
import { createMcpRequestHandling, McpExchange } from './pipeline.js';
import type { ProxyRegistry, ProxyRuntime, ResourceUrls } from './registry.js';
import {
  type BodyBudget,
  type BodyError,
  type ByteBudget,
  contentRefusal,
  McpHttp,
  readBody,
} from './request.js';
import { traceExchange } from './tracing.js';

export interface DataPlaneOptions {
  registry: ProxyRegistry;
  metrics: GatewayMetrics;
  audit: Logger;
  logger: Logger;
  maxRequestBodyBytes: number;
  bodyBudget: BodyBudget;
  /** Upstream answers buffered to be filtered, all proxies (`limits.max_buffered_answer_bytes`). */
  answerBudget: ByteBudget;
  /** The listener this front serves (its scheme and own addresses). */
  listener: Listener;
  /** Which browser origins may call `/mcp` (and read metadata): DNS rebinding protection. */
  originPolicy: OriginPolicy;
  /** `/_gateway-health/healthy` and `/ready` on this listener (the plain one). */
  health?: { ready(): boolean };
}

/** Methods served at `<context>/mcp` (HEAD as GET without a body); any other gets 405. */
const MCP_METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'DELETE', 'OPTIONS', 'HEAD']);

/** Methods a CORS preflight may ask for on the data plane. */
const CORS_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS'];

/** The `Allow` field of the gateway's own OPTIONS and 405 answers (RFC 9110 §10.2.1). */
const ALLOW = [...MCP_METHODS].join(', ');

const HEALTH_LIVE = '/_gateway-health/healthy';
const HEALTH_READY = '/_gateway-health/ready';
const NO_STORE = { 'cache-control': 'no-store' };

const BODY_BUDGET_EXHAUSTED = 'The gateway is receiving too many request bodies; retry shortly';

/**
 * The body of every answer the gateway gives itself on a data-plane listener, one shape per
 * surface: on a proxy's `<context>/mcp` a JSON-RPC error (what an MCP client reads; `-32603`
 * for a failure of the gateway's own), everywhere else the gateway's `{error, message}`
 * (common's `errorReplyBody`, generic for a 5xx). A policy's refusal carries its own body.
 */
function refusalBody(mcp: boolean, status: number, message: string): unknown {
  if (!mcp) return errorReplyBody(status, message);
  return status >= 500 && status !== 503
    ? jsonRpcError(null, -32603, 'Internal error')
    : jsonRpcError(null, -32000, message);
}

/**
 * The one front handler of a data-plane listener: it takes every request before Fastify (whose
 * request, reply, hook and route machinery would cost more than the gateway's own work on the
 * hot path) and serves every path: each proxy's `<context>/mcp`, its protected resource
 * metadata (RFC 9728), health, and the 404s. CORS is applied here once for every path, the
 * body budget is taken here once (only a POST to `<context>/mcp` has its body read: any other
 * request's body is never read, and its connection closes after the answer), and every answer
 * of the gateway's own has its surface's one shape (`refusalBody`). Fastify still stands behind
 * it for what `createApp` gives every service: 503 while the server shuts down.
 *
 * On `<context>/mcp` the order is that of the MCP Streamable HTTP transport's security rules:
 * CORS (answering preflights), the Origin check (403), the gateway's own answers to OPTIONS and
 * to methods it does not serve (405), authentication from the headers before a byte of the body
 * is read, the content headers (a body read otherwise upstream is refused), the in-flight body
 * budget, then the body (size-capped) and the policies. Only a request that passed them all goes
 * upstream, with the upstream credential.
 */
export function createDataPlaneFront(options: DataPlaneOptions): FrontHandler {
  const { registry, listener, bodyBudget, originPolicy, maxRequestBodyBytes, health } = options;
  const log = options.logger.child({}, { level: routeLogLevel(options.logger.level) });
  const handling = createMcpRequestHandling({ ...options, log });
  const applyCors = createCors({ policy: originPolicy, methods: CORS_METHODS });
  // Decided once: every service starts tracing, or not, before it makes its servers.
  const tracing = tracingEnabled();

  /** A failure no step expected: logged (never with the request's credentials) and a 500. */
  const failed = (http: McpHttp, mcp: boolean, error: unknown) => {
    log.error({ reqId: http.id, err: error }, 'request failed');
    if (http.answered) http.response.destroy();
    else http.sendJson(500, refusalBody(mcp, 500, ''));
  };

  /** An answer of the gateway's own that no audit line records (no proxy's call). */
  const reply = (http: McpHttp, mcp: boolean, status: number, message: string) =>
    http.sendJson(status, refusalBody(mcp, status, message));

  /** The error answer for a body that cannot be read. */
  const refuseBody = (http: McpHttp, error: BodyError) => {
    http.closeConnection();
    reply(http, true, error.status, error.message);
  };

  /** Called from event and promise callbacks: nothing may escape it. */
  const handle = (exchange: McpExchange, http: McpHttp) => {
    try {
      handling.handle(exchange, http)?.catch((error) => failed(http, true, error));
    } catch (error) {
      failed(http, true, error);
    }
  };

  /** Body stage: the content headers, the budget, then the body of a POST. */
  const afterHeaders = (exchange: McpExchange, http: McpHttp) => {
    if (http.answered) return;
    const { headers, method } = http;
    const refusal = contentRefusal(method, headers, http.hasUnreadBody);
    if (refusal) {
      const { status, message, reason } = refusal;
      const body = refusalBody(true, status, message);
      return handling.answer(exchange, http, status, 'bad_request', reason, body, refusal.headers);
    }
    if (!bodyBudget.admit(headers, maxRequestBodyBytes, http.response)) {
      http.closeConnection();
      const reason = 'request body budget exhausted';
      const body = refusalBody(true, 503, BODY_BUDGET_EXHAUSTED);
      handling.answer(exchange, http, 503, 'unavailable', reason, body, { 'retry-after': '1' });
      return;
    }
    // Past `contentRefusal`, only a POST may have a body.
    if (method !== 'POST') return handle(exchange, http);
    readBody(http.request, maxRequestBodyBytes, (error, body) => {
      if (error) return refuseBody(http, error);
      http.body = body;
      handle(exchange, http);
    });
  };

  /** A proxy's `<context>/mcp`, CORS applied. */
  const serveMcp = (runtime: ProxyRuntime, http: McpHttp) => {
    const { headers, method } = http;
    const remoteAddress = http.request.socket.remoteAddress ?? '';
    const urls = resourceUrlsOf(runtime, listener.baseFor(headers.host));
    const exchange = new McpExchange(runtime, method, headers, remoteAddress, urls);
    // An OPTIONS that is no preflight is answered below, with no audit line and no span.
    if (tracing && method !== 'OPTIONS') {
      exchange.traced = true;
      traceExchange(exchange, http.response);
    }
    const { origin } = headers;
    if (origin !== undefined && !originPolicy.check(origin, headers.host)) {
      // MCP Streamable HTTP transport: an Origin that is not allowed gets 403 (DNS rebinding).
      const body = refusalBody(true, 403, 'Origin not allowed');
      return handling.answer(exchange, http, 403, 'forbidden', 'origin not allowed', body);
    }
    // Neither goes upstream: an OPTIONS that is no preflight is answered here (RFC 9110 §9.3.7),
    // so no request the policies never saw carries the upstream credential.
    if (method === 'OPTIONS') {
      http.setHeader('allow', ALLOW);
      return http.sendEmpty(204);
    }
    if (!MCP_METHODS.has(method)) {
      const body = refusalBody(true, 405, 'Method not allowed');
      return handling.answer(exchange, http, 405, 'bad_request', 'method not allowed', body, {
        allow: ALLOW,
      });
    }
    const pending = handling.onHeaders(exchange, http);
    if (pending) {
      pending.then(() => afterHeaders(exchange, http)).catch((error) => failed(http, true, error));
    } else {
      afterHeaders(exchange, http);
    }
  };

  /** Protected resource metadata (RFC 9728 §3) of a proxy that authenticates its callers. */
  const serveMetadata = (runtime: ProxyRuntime | undefined, http: McpHttp) => {
    if (!runtime?.authenticator)
      return reply(http, false, 404, 'No protected resource metadata here');
    const { resourceUrl } = resourceUrlsOf(runtime, listener.baseFor(http.headers.host));
    const document: Record<string, unknown> = {
      resource: resourceUrl,
      authorization_servers: runtime.authenticator.authorizationServers,
    };
    if (runtime.scopesSupported.length > 0) document.scopes_supported = runtime.scopesSupported;
    http.sendJson(200, document, { 'cache-control': 'public, max-age=300' });
  };

  const route = (http: McpHttp, path: string, runtime: ProxyRuntime | undefined) => {
    const { method, headers } = http;
    const cors = applyCors(method, headers, http);
    if (cors === 'preflight-refused')
      return reply(http, runtime !== undefined, 403, CORS_PREFLIGHT_REFUSED.message);
    if (cors === 'preflight-allowed') return http.sendEmpty(204);
    if (runtime) return serveMcp(runtime, http);
    if (method === 'GET' || method === 'HEAD') {
      const metadata = metadataRuntimeAt(registry, path);
      if (metadata !== false) return serveMetadata(metadata, http);
      if (health && path === HEALTH_LIVE)
        return http.sendJson(200, { status: 'healthy' }, NO_STORE);
      if (health && path === HEALTH_READY) {
        const ready = health.ready();
        return http.sendJson(
          ready ? 200 : 503,
          { status: ready ? 'ready' : 'not_ready' },
          NO_STORE,
        );
      }
    }
    reply(http, false, 404, 'No MCP proxy at this path');
  };

  return (request, response, app: AppState) => {
    const http = new McpHttp(request, response, app);
    const path = pathOf(request.url as string);
    const runtime = mcpRuntimeAt(registry, path);
    try {
      route(http, path, runtime);
    } catch (error) {
      failed(http, runtime !== undefined, error);
    }
    return true;
  };
}

/** The data plane's log level: the configured one, never chattier than `warn`. */
function routeLogLevel(configured: string): LogLevel {
  return quieterLevel(configured, 'warn');
}
const LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function quieterLevel(current: string, floor: LogLevel): LogLevel {
  const index = LEVELS.indexOf(current as LogLevel);
  return index > LEVELS.indexOf(floor) ? (LEVELS[index] ?? floor) : floor;
}

const PRM_SUFFIX = '/.well-known/oauth-protected-resource';

/** A proxy's resource URL and metadata URL on a listener base (RFC 9728 §3.1). */
function resourceUrlsOf(runtime: ProxyRuntime, base: string): ResourceUrls {
  let found = runtime.resourceUrls.get(base);
  if (!found) {
    found = {
      resourceUrl: `${base}${runtime.context}/mcp`,
      resourceMetadataUrl: `${base}${runtime.context}${PRM_SUFFIX}`,
    };
    runtime.resourceUrls.set(base, found);
  }
  return found;
}
const MCP_SUFFIX = '/mcp';

/**
 * The request path as the router sees it: no query, no trailing slashes. Nothing is decoded:
 * a context is matched byte for byte, so a percent-encoded or dot-segment spelling of a context
 * reaches no proxy at all rather than a different policy.
 */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  let end = query < 0 ? url.length : query;
  while (end > 1 && url.charCodeAt(end - 1) === 47) end--;
  return url.slice(0, end);
}

/** The proxy whose `<context>/mcp` this path is, if any. */
function mcpRuntimeAt(registry: ProxyRegistry, path: string): ProxyRuntime | undefined {
  return path.endsWith(MCP_SUFFIX)
    ? registry.routes.get(path.slice(0, -MCP_SUFFIX.length))
    : undefined;
}

/**
 * The proxy whose protected resource metadata this path asks for (both RFC 9728 locations):
 * false when the path is no metadata location at all.
 */
function metadataRuntimeAt(
  registry: ProxyRegistry,
  path: string,
): ProxyRuntime | undefined | false {
  if (path.startsWith(`${PRM_SUFFIX}/`) && path.endsWith(MCP_SUFFIX)) {
    return registry.routes.get(path.slice(PRM_SUFFIX.length, -MCP_SUFFIX.length));
  }
  if (path.endsWith(PRM_SUFFIX)) return registry.routes.get(path.slice(0, -PRM_SUFFIX.length));
  return false;
}

const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The addresses one listener answers to. A proxy's resource URL must equal the URL a client
 * connected to (RFC 9728 §3.3), so it is built from the request's Host when that Host is one
 * of this listener's own (loopback names on its port, or the configured public address);
 * any other Host gets the listener's default address and never chooses the URL.
 */
export class Listener {
  private readonly bases = new Map<string, string>();
  private fallback = '';

  constructor(readonly scheme: 'http' | 'https') {}

  /** Called once the port is known; `publicUrl` is `gatewayurl`, the same on every listener. */
  bind(port: number, publicUrl: string | undefined): void {
    this.bases.clear();
    const defaultPort = this.scheme === 'https' ? 443 : 80;
    for (const host of LOOPBACK_HOSTS) {
      this.bases.set(`${host}:${port}`, `${this.scheme}://${host}:${port}`);
      if (port === defaultPort) this.bases.set(host, `${this.scheme}://${host}`);
    }
    this.fallback = `${this.scheme}://localhost:${port}`;
    if (publicUrl) {
      this.bases.set(new URL(publicUrl).host, publicUrl);
      this.fallback = publicUrl;
    }
  }

  /** The base URL (`scheme://host[:port]`) for a request's Host header. */
  baseFor(host: string | undefined): string {
    if (host === undefined) return this.fallback;
    return this.bases.get(host) ?? this.bases.get(host.toLowerCase()) ?? this.fallback;
  }

  /** Origins of this listener (`scheme://host:port`), for the Origin allow list. */
  origins(): string[] {
    return [...new Set(this.bases.values())];
  }
}
