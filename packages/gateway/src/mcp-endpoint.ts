import {
  type AppState,
  CORS_PREFLIGHT_REFUSED,
  createCors,
  errorReplyBody,
  type FrontHandler,
  jsonRpcError,
  type Logger,
} from '@mcp-identity/common';
import { McpExchange } from './exchange.js';
import { McpHttp } from './mcp-http.js';
import { createMcpRequestHandling } from './mcp-request.js';
import { mcpRuntimeAt, pathOf } from './proxy-paths.js';
import type { ProxyRuntime } from './registry.js';
import { type BodyError, isMediaType, readBody, UNSUPPORTED_MEDIA_TYPE } from './request-body.js';
import {
  BODY_BUDGET_EXHAUSTED,
  DATA_PLANE_METHODS,
  type DataPlaneOptions,
  routeLogLevel,
} from './routing.js';

/** Methods served at `<context>/mcp`: the data plane's, and HEAD as GET without a body. */
const MCP_METHODS: ReadonlySet<string> = new Set([...DATA_PLANE_METHODS, 'HEAD']);

/** Methods whose body is never read (RFC 9110 §9.3.1: a GET body has no defined meaning). */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/**
 * Serves every deployed proxy's `<context>/mcp` straight from the node:http server, before
 * Fastify: this is the hot path of the gateway, and Fastify's request, reply, hook and route
 * machinery cost more than the gateway's own work on it. Everything else on the listener
 * (metadata, health, the 404s, other methods) stays with Fastify (`registerDataPlane`).
 *
 * The order is that of the MCP Streamable HTTP transport's security rules: CORS (answering
 * preflights), the Origin check (403), authentication from the headers before a byte of the
 * body is read, the in-flight body budget, then the body (size-capped) and the policies.
 */
export function createMcpEndpoint(options: DataPlaneOptions & { logger: Logger }): FrontHandler {
  const { registry, listener, bodyBudget, originPolicy, maxRequestBodyBytes } = options;
  const log = options.logger.child({}, { level: routeLogLevel(options.logger.level) });
  const handling = createMcpRequestHandling({ ...options, log });
  const applyCors = createCors({ policy: originPolicy, methods: DATA_PLANE_METHODS });

  /** A failure no step expected: logged (never with the request's credentials) and a 500. */
  const failed = (http: McpHttp, error: unknown) => {
    log.error({ reqId: http.id, err: error }, 'request failed');
    if (http.answered) http.response.destroy();
    else http.sendJson(500, errorReplyBody(500, ''));
  };

  /** The error answer for a body that cannot be accepted, in the gateway's error shape. */
  const refuseBody = (http: McpHttp, error: BodyError, closeConnection: boolean) => {
    if (closeConnection) http.closeConnection();
    http.sendJson(error.status, errorReplyBody(error.status, error.message));
  };

  /** Called from event and promise callbacks: nothing may escape it. */
  const handle = (exchange: McpExchange, http: McpHttp) => {
    try {
      handling.handle(exchange, http)?.catch((error) => failed(http, error));
    } catch (error) {
      failed(http, error);
    }
  };

  /** Body stage: the budget, then the body as its method and headers call for. */
  const afterHeaders = (exchange: McpExchange, http: McpHttp) => {
    if (http.answered) return;
    const { headers, method } = http;
    if (!bodyBudget.admit(headers, maxRequestBodyBytes, http.response)) {
      http.closeConnection();
      const retry = { 'retry-after': '1' };
      const body = jsonRpcError(null, -32000, BODY_BUDGET_EXHAUSTED);
      handling.answer(
        exchange,
        http,
        503,
        'unavailable',
        'request body budget exhausted',
        body,
        retry,
      );
      return;
    }
    if (BODYLESS_METHODS.has(method)) return handle(exchange, http);
    const contentType = headers['content-type'];
    if (contentType === undefined) {
      if (!http.hasUnreadBody) return handle(exchange, http);
    } else if (!isMediaType(contentType)) {
      return refuseBody(http, UNSUPPORTED_MEDIA_TYPE, false);
    }
    readBody(http.request, maxRequestBodyBytes, (error, body) => {
      if (error) return refuseBody(http, error, true);
      http.body = body;
      handle(exchange, http);
    });
  };

  const serve = (runtime: ProxyRuntime, http: McpHttp) => {
    const { headers, method } = http;
    const cors = applyCors(method, headers, http);
    if (cors === 'preflight-refused') return http.sendJson(403, CORS_PREFLIGHT_REFUSED);
    if (cors === 'preflight-allowed') return http.sendEmpty(204);
    const remoteAddress = http.request.socket.remoteAddress ?? '';
    const base = listener.baseFor(headers.host);
    const exchange = new McpExchange(runtime, method, headers, remoteAddress, base);
    const { origin } = headers;
    if (origin !== undefined && !originPolicy.check(origin, headers.host)) {
      // MCP Streamable HTTP transport: an Origin that is not allowed gets 403 (DNS rebinding).
      const body = jsonRpcError(null, -32000, 'Origin not allowed');
      return handling.answer(exchange, http, 403, 'forbidden', 'origin not allowed', body);
    }
    const pending = handling.onHeaders(exchange, http);
    if (pending) {
      pending.then(() => afterHeaders(exchange, http)).catch((error) => failed(http, error));
    } else {
      afterHeaders(exchange, http);
    }
  };

  return (request, response, app: AppState) => {
    if (!MCP_METHODS.has(request.method as string)) return false;
    const runtime = mcpRuntimeAt(registry, pathOf(request.url as string));
    if (!runtime) return false;
    const http = new McpHttp(request, response, app);
    try {
      serve(runtime, http);
    } catch (error) {
      failed(http, error);
    }
    return true;
  };
}
