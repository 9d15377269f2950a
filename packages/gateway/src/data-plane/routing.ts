import { createCorsHook, gatewayError, type Logger, type OriginPolicy } from '@mcp-identity/common';
import type { FastifyInstance, FastifyReply, FastifyRequest, LogLevel } from 'fastify';
import type { GatewayMetrics } from '../metrics.js';
import type { BodyBudget, ByteBudget } from './body-budget.js';
import type { Listener } from './listener.js';
import { metadataRuntimeAt, type ProxyRegistry, type ProxyRuntime, pathOf } from './registry.js';

export interface DataPlaneOptions {
  registry: ProxyRegistry;
  metrics: GatewayMetrics;
  audit: Logger;
  maxRequestBodyBytes: number;
  bodyBudget: BodyBudget;
  /** Upstream answers buffered to be filtered, all proxies (`limits.max_buffered_answer_bytes`). */
  answerBudget: ByteBudget;
  /** The listener this app serves (its scheme and own addresses). */
  listener: Listener;
  /** Which browser origins may call `/mcp` (and read metadata): DNS rebinding protection. */
  originPolicy: OriginPolicy;
}

/**
 * Methods the data plane serves on a proxy's paths: `<context>/mcp` answers any other with 405
 * (`createMcpEndpoint`), the other paths with 404 (no route).
 */
export const DATA_PLANE_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS'] as const;

/** What the Fastify side of the data plane reads: it records no audit line and no metric. */
type FastifyDataPlaneOptions = Omit<DataPlaneOptions, 'metrics' | 'audit' | 'answerBudget'>;

/**
 * Serves what the data plane answers through Fastify: protected resource metadata of every
 * deployed proxy, and the 404s of paths no proxy serves. A proxy's `<context>/mcp` itself is
 * served before Fastify (`createMcpEndpoint`).
 */
export function registerDataPlane(app: FastifyInstance, options: FastifyDataPlaneOptions): void {
  // A child scope, so its raw-body parsing does not touch sibling routes (health).
  // Oversized bodies are refused by Fastify with 413 through the app's error handler.
  app.register(async (scope) => dataPlaneRoutes(scope, options));
}

function dataPlaneRoutes(app: FastifyInstance, options: FastifyDataPlaneOptions): void {
  const { registry, listener, bodyBudget } = options;

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: options.maxRequestBodyBytes },
    (_request, body, done) => done(null, body),
  );
  // CORS for allowed origins on every data plane path; it also answers preflights.
  app.addHook(
    'onRequest',
    createCorsHook({ policy: options.originPolicy, paths: ['/*'], methods: DATA_PLANE_METHODS }),
  );

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

  // No per-request log lines below `warn`, as on `/mcp` (`createMcpEndpoint`). A route level
  // replaces the configured one, so never make the route chattier.
  const logLevel = routeLogLevel(app.log.level);
  app.route({
    method: [...DATA_PLANE_METHODS],
    url: '/*',
    logLevel,
    preParsing: (request, reply, payload, done) => {
      if (!bodyBudget.admit(request.headers, options.maxRequestBodyBytes, reply.raw)) {
        reply.header('connection', 'close').header('retry-after', '1');
        gatewayError(reply, 503, BODY_BUDGET_EXHAUSTED);
        return;
      }
      done(null, payload);
    },
    handler: async (request, reply) => {
      if (request.method === 'GET') {
        const runtime = metadataRuntimeAt(registry, pathOf(request.url));
        if (runtime !== false) return serveMetadata(request, reply, runtime);
      }
      return reply.code(404).send({ error: 'Not Found', message: 'No MCP proxy at this path' });
    },
  });
}

export const BODY_BUDGET_EXHAUSTED =
  'The gateway is receiving too many request bodies; retry shortly';

/** The data plane's log level: the configured one, never chattier than `warn`. */
export function routeLogLevel(configured: string): LogLevel {
  return quieterLevel(configured, 'warn');
}
const LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function quieterLevel(current: string, floor: LogLevel): LogLevel {
  const index = LEVELS.indexOf(current as LogLevel);
  return index > LEVELS.indexOf(floor) ? (LEVELS[index] ?? floor) : floor;
}
