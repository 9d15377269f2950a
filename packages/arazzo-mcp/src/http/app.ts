import {
  createApp,
  createCorsHook,
  createOriginPolicy,
  type HttpRequestRecorder,
  JSON_RPC,
  jsonRpcError,
  type Logger,
  registerHealthRoutes,
} from '@mcp-identity/common';
import type {
  FastifyError,
  FastifyInstance,
  FastifyPluginAsync,
  onRequestAsyncHookHandler,
  preHandlerAsyncHookHandler,
} from 'fastify';
import { McpExchangeRouter } from '../mcp/exchange-router.js';
import { createModernExchanges } from '../mcp/modern-exchanges.js';
import { TRANSPORT_ERROR } from '../mcp/post-messages.js';
import { createMcpServer, mcpServerFactory, type ServerInfo } from '../mcp/server.js';
import type { ToolCatalog } from '../tools/catalog.js';
import { createMcpFront } from './mcp-front.js';
import { serveMcpPost } from './mcp-post.js';
import { refuseForeignOrigins } from './origin-guard.js';
import { type RequiredHeader, requireHeader } from './required-header.js';

export const MCP_PATH = '/mcp';
export const HEALTH_PATH = '/health';

export interface ArazzoMcpAppOptions {
  catalog: ToolCatalog;
  logger: Logger;
  serverInfo?: ServerInfo;
  /**
   * Runs before every `/mcp` request (an authentication guard, for instance). It may reply
   * to stop the request, and may set `request.raw.auth` (the SDK's AuthInfo) for the tools.
   */
  mcpGuard?: preHandlerAsyncHookHandler;
  /** An authorization layer mounted at the root (`setUpBuiltinAuth` builds one). */
  auth?: HttpAuth;
  /** Refuse every `/mcp` request without this header value (401); health stays open. */
  requiredHeader?: RequiredHeader;
  /**
   * Browser origins allowed on `/mcp` besides loopback ones and `ownOrigins` (anything else
   * with an `Origin` header gets 403); they also get CORS there.
   */
  allowedOrigins?: readonly string[];
  /** The server's own public origins (from `--public-url`). */
  ownOrigins?: readonly string[];
  /**
   * Counts the `/mcp` requests answered before Fastify (without `auth` and `mcpGuard`, see
   * createMcpFront); Fastify's own hook (`recordHttpRequests`) counts the others.
   */
  recordRequest?: HttpRequestRecorder;
}

export interface HttpAuth {
  /** Runs first on every request, before any body is read; it decides which paths it guards. */
  guard: onRequestAsyncHookHandler;
  /** Routes of the authorization layer (its endpoints, the application's login). */
  routes: FastifyPluginAsync;
  /** Believe `X-Forwarded-For` for the client IP (rate limits). */
  trustProxy: boolean;
}

/** Streamable HTTP needs only POST when the server keeps no sessions. */
const NOT_ALLOWED_METHODS = ['GET', 'DELETE', 'PUT', 'PATCH'] as const;

/** Fastify's default, stated so that the front handler holds bodies to the same limit. */
const BODY_LIMIT = 1024 * 1024;

/**
 * The HTTP app: stateless Streamable HTTP at `/mcp`, both protocol eras at the one URL (legacy
 * exchanges routed to one MCP server for the app, modern ones to a server each; see
 * McpExchangeRouter) and `GET /health`. Without an authentication layer
 * (`auth`, `mcpGuard`), the POSTs it will serve are taken before Fastify (createMcpFront).
 */
export function createArazzoMcpApp(options: ArazzoMcpAppOptions): FastifyInstance {
  const server = createMcpServer(options.catalog, options.serverInfo);
  const modern = createModernExchanges(
    mcpServerFactory(options.catalog, options.serverInfo),
    (error) => options.logger.debug({ err: error }, 'modern MCP exchange refused or failed'),
  );
  const router = new McpExchangeRouter(
    (name, args, auth) => options.catalog.call(name, args, auth),
    modern,
  );
  const policy = createOriginPolicy({
    allowedOrigins: options.allowedOrigins,
    ownOrigins: options.ownOrigins ?? [],
  });
  const front =
    options.auth || options.mcpGuard
      ? undefined
      : createMcpFront({
          router,
          path: MCP_PATH,
          policy,
          requiredHeader: options.requiredHeader,
          bodyLimit: BODY_LIMIT,
          log: options.logger,
          recordRequest: options.recordRequest,
        });
  const app = createApp({
    logger: options.logger,
    trustProxy: options.auth?.trustProxy,
    bodyLimit: BODY_LIMIT,
    front,
  });
  app.addHook('onReady', () => server.connect(router));
  app.addHook('onClose', async () => {
    await Promise.all([server.close(), modern.close()]);
  });
  // Before any authentication, so that browsers can read its answers and foreign pages get
  // nothing further.
  app.addHook('onRequest', createCorsHook({ policy, paths: [MCP_PATH], methods: ['POST'] }));
  app.addHook('onRequest', refuseForeignOrigins(policy, [MCP_PATH]));
  registerHealthRoutes(app, { livePath: HEALTH_PATH });
  if (options.auth) {
    app.addHook('onRequest', options.auth.guard);
    app.register(options.auth.routes);
  }
  app.register(async (scope) => {
    // The body is read as text here so that malformed JSON gets a JSON-RPC parse error
    // instead of the framework's generic 400.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    // Framework refusals on /mcp (a malformed Content-Type, an oversized body) keep the
    // JSON-RPC shape clients parse there.
    scope.setErrorHandler((error: FastifyError, request, reply) => {
      const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
      if (status >= 500) {
        request.log.error({ err: error }, 'MCP request failed');
        return reply
          .code(status)
          .send(jsonRpcError(null, JSON_RPC.internalError, 'Internal server error'));
      }
      return reply.code(status).send(jsonRpcError(null, TRANSPORT_ERROR, error.message));
    });
    if (options.requiredHeader) scope.addHook('onRequest', requireHeader(options.requiredHeader));
    if (options.mcpGuard) scope.addHook('preHandler', options.mcpGuard);
    scope.post(MCP_PATH, (request, reply) => {
      reply.hijack();
      return serveMcpPost(
        router,
        request.raw,
        reply.raw,
        request.body as string | undefined,
        request.log,
      );
    });
    scope.route({
      method: [...NOT_ALLOWED_METHODS],
      url: MCP_PATH,
      handler: async (_request, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .send(
            jsonRpcError(
              null,
              TRANSPORT_ERROR,
              'Method not allowed: this server is stateless, use POST.',
            ),
          ),
    });
  });
  return app;
}
