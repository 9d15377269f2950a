import {
  createCorsHook,
  gatewayError,
  jsonRpcError,
  type Logger,
  type OriginPolicy,
} from '@mcp-identity/common';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyServerOptions,
  LogLevel,
} from 'fastify';
import type { BodyBudget } from './body-budget.js';
import { McpExchange } from './exchange.js';
import type { Listener } from './listener.js';
import { createMcpRequestHandling } from './mcp-request.js';
import type { GatewayMetrics } from './metrics.js';
import type { ProxyRegistry, ProxyRuntime } from './registry.js';

const PRM_SUFFIX = '/.well-known/oauth-protected-resource';
const MCP_SUFFIX = '/mcp';

export interface DataPlaneOptions {
  registry: ProxyRegistry;
  metrics: GatewayMetrics;
  audit: Logger;
  maxRequestBodyBytes: number;
  bodyBudget: BodyBudget;
  /** The listener this app serves (its scheme and own addresses). */
  listener: Listener;
  /** Which browser origins may call `/mcp` (and read metadata): DNS rebinding protection. */
  originPolicy: OriginPolicy;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when the path is a deployed proxy's `<context>/mcp`. */
    mcpExchange: McpExchange | undefined;
  }
}

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

/** Serves `<context>/mcp` and protected resource metadata for every deployed proxy. */
export function registerDataPlane(app: FastifyInstance, options: DataPlaneOptions): void {
  // A child scope, so its raw-body parsing does not touch sibling routes (health).
  // Oversized bodies are refused by Fastify with 413 through the app's error handler.
  app.register(async (scope) => dataPlaneRoutes(scope, options));
}

function dataPlaneRoutes(app: FastifyInstance, options: DataPlaneOptions): void {
  const { registry, listener, bodyBudget } = options;
  const handling = createMcpRequestHandling(options);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: options.maxRequestBodyBytes },
    (_request, body, done) => done(null, body),
  );
  app.decorateRequest('mcpExchange', undefined);
  // CORS for allowed origins on every data plane path (metadata and `/mcp`); it also answers
  // preflights, before authentication.
  app.addHook(
    'onRequest',
    createCorsHook({
      policy: options.originPolicy,
      paths: ['/*'],
      methods: ['GET', 'POST', 'DELETE'],
    }),
  );

  /** The proxy whose `<context>/mcp` this path is, if any. */
  const mcpRuntime = (path: string): ProxyRuntime | undefined =>
    path.endsWith(MCP_SUFFIX)
      ? registry.byContextPath(path.slice(0, -MCP_SUFFIX.length))
      : undefined;

  /** The proxy whose protected resource metadata this GET asks for (both RFC 9728 locations). */
  const metadataRuntime = (path: string): ProxyRuntime | undefined | false => {
    if (path.startsWith(`${PRM_SUFFIX}/`) && path.endsWith(MCP_SUFFIX)) {
      return registry.byContextPath(path.slice(PRM_SUFFIX.length, -MCP_SUFFIX.length));
    }
    if (path.endsWith(PRM_SUFFIX)) return registry.byContextPath(path.slice(0, -PRM_SUFFIX.length));
    return false;
  };

  const serveMetadata = (request: FastifyRequest, reply: FastifyReply, runtime?: ProxyRuntime) => {
    if (!runtime?.authenticator) {
      return reply
        .code(404)
        .send({ error: 'Not Found', message: 'No protected resource metadata here' });
    }
    const { resourceUrl } = runtime.urlsFor(listener.baseFor(request.headers.host));
    const document: Record<string, unknown> = {
      resource: resourceUrl,
      authorization_servers: runtime.authenticator.authorizationServers,
    };
    if (runtime.scopesSupported.length > 0) document.scopes_supported = runtime.scopesSupported;
    return reply.header('cache-control', 'public, max-age=300').send(document);
  };

  // The audit line is the access log of MCP traffic; Fastify's per-request lines would repeat
  // it. A route level replaces the configured one, so never make the route chattier.
  const logLevel = quieterLevel(app.log.level, 'warn');
  app.route({
    method: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    url: '/*',
    logLevel,
    childLoggerFactory: childrenAtLevel(logLevel),
    onRequest: (request, reply, done) => {
      const runtime = mcpRuntime(pathOf(request.url));
      if (!runtime) return done();
      const { headers } = request;
      const base = listener.baseFor(headers.host);
      const exchange = new McpExchange(runtime, request.method, headers, request.ip, base);
      request.mcpExchange = exchange;
      const { origin } = headers;
      if (origin !== undefined && !options.originPolicy.check(origin, request.headers.host)) {
        // MCP Streamable HTTP transport: an Origin that is not allowed gets 403 (DNS rebinding).
        const body = jsonRpcError(null, -32000, 'Origin not allowed');
        handling.answer(exchange, reply, 403, 'forbidden', 'origin not allowed', body);
        return;
      }
      // Authentication from the headers, before a byte of the body is read.
      const pending = handling.onHeaders(exchange, reply);
      if (pending) pending.then(() => done(), done);
      else done();
    },
    preParsing: (request, reply, payload, done) => {
      const { headers } = request;
      if (headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) {
        return done(null, payload);
      }
      const declared = Number(headers['content-length']);
      const bytes = Math.min(
        Number.isFinite(declared) && declared >= 0 ? declared : options.maxRequestBodyBytes,
        options.maxRequestBodyBytes,
      );
      if (!bodyBudget.tryReserve(bytes)) {
        const exchange = request.mcpExchange;
        const message = 'The gateway is receiving too many request bodies; retry shortly';
        reply.header('connection', 'close').header('retry-after', '1');
        if (exchange) {
          handling.answer(
            exchange,
            reply,
            503,
            'unavailable',
            'request body budget exhausted',
            jsonRpcError(null, -32000, message),
          );
        } else {
          gatewayError(reply, 503, message);
        }
        return;
      }
      reply.raw.once('close', () => bodyBudget.release(bytes));
      done(null, payload);
    },
    handler: async (request, reply) => {
      const exchange = request.mcpExchange;
      if (exchange) return handling.handle(exchange, request, reply);
      if (request.method === 'GET') {
        const runtime = metadataRuntime(pathOf(request.url));
        if (runtime !== false) return serveMetadata(request, reply, runtime);
      }
      return reply.code(404).send({ error: 'Not Found', message: 'No MCP proxy at this path' });
    },
  });
}

/**
 * Request loggers at the route's level, as Fastify's own factory makes them, but children of one
 * logger already at that level: pino rebuilds every log method of a child given a level, and
 * Fastify makes a child per request.
 */
function childrenAtLevel(level: LogLevel): NonNullable<FastifyServerOptions['childLoggerFactory']> {
  const atLevel = new WeakMap<FastifyBaseLogger, FastifyBaseLogger>();
  return (logger, bindings, options) => {
    if (options.level !== level || options.serializers) return logger.child(bindings, options);
    let parent = atLevel.get(logger);
    if (!parent) {
      parent = logger.child({}, { level });
      atLevel.set(logger, parent);
    }
    return parent.child(bindings);
  };
}

const LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function quieterLevel(current: string, floor: LogLevel): LogLevel {
  const index = LEVELS.indexOf(current as LogLevel);
  return index > LEVELS.indexOf(floor) ? (LEVELS[index] ?? floor) : floor;
}
