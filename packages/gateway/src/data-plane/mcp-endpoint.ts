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
import { mcpRuntimeAt, type ProxyRuntime, pathOf } from './registry.js';
import { type BodyError, contentRefusal, readBody } from './request-body.js';
import {
  BODY_BUDGET_EXHAUSTED,
  DATA_PLANE_METHODS,
  type DataPlaneOptions,
  routeLogLevel,
} from './routing.js';

/** Methods served at `<context>/mcp`: the data plane's, and HEAD as GET without a body. */
const MCP_METHODS: ReadonlySet<string> = new Set([...DATA_PLANE_METHODS, 'HEAD']);

/** The `Allow` field of the gateway's own OPTIONS and 405 answers (RFC 9110 §10.2.1). */
const ALLOW = [...MCP_METHODS].join(', ');

const METHOD_NOT_ALLOWED = jsonRpcError(null, -32000, 'Method not allowed');

/**
 * Serves every deployed proxy's `<context>/mcp` straight from the node:http server, before
 * Fastify: this is the hot path of the gateway, and Fastify's request, reply, hook and route
 * machinery cost more than the gateway's own work on it, whatever the method. Everything else
 * on the listener (metadata, health, the 404s) stays with Fastify (`registerDataPlane`).
 *
 * The order is that of the MCP Streamable HTTP transport's security rules: CORS (answering
 * preflights), the Origin check (403), the gateway's own answers to OPTIONS and to methods it
 * does not serve (405), authentication from the headers before a byte of the body is read,
 * the content headers (a body read otherwise upstream is refused), the in-flight body budget,
 * then the body (size-capped) and the policies. Only a request that passed them all goes
 * upstream, with the upstream credential.
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

  /** The error answer for a body that cannot be read, in the gateway's error shape. */
  const refuseBody = (http: McpHttp, error: BodyError) => {
    http.closeConnection();
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

  /** Body stage: the content headers, the budget, then the body of a POST. */
  const afterHeaders = (exchange: McpExchange, http: McpHttp) => {
    if (http.answered) return;
    const { headers, method } = http;
    const refusal = contentRefusal(method, headers, http.hasUnreadBody);
    if (refusal) {
      const { status, message, reason } = refusal;
      const body = jsonRpcError(null, -32000, message);
      return handling.answer(exchange, http, status, 'bad_request', reason, body, refusal.headers);
    }
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
    // Past `contentRefusal`, only a POST may have a body.
    if (method !== 'POST') return handle(exchange, http);
    readBody(http.request, maxRequestBodyBytes, (error, body) => {
      if (error) return refuseBody(http, error);
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
    // Neither goes upstream: an OPTIONS that is no preflight is answered here (RFC 9110 §9.3.7),
    // so no request the policies never saw carries the upstream credential.
    if (method === 'OPTIONS') {
      http.setHeader('allow', ALLOW);
      return http.sendEmpty(204);
    }
    if (!MCP_METHODS.has(method)) {
      const reason = 'method not allowed';
      return handling.answer(exchange, http, 405, 'bad_request', reason, METHOD_NOT_ALLOWED, {
        allow: ALLOW,
      });
    }
    const pending = handling.onHeaders(exchange, http);
    if (pending) {
      pending.then(() => afterHeaders(exchange, http)).catch((error) => failed(http, error));
    } else {
      afterHeaders(exchange, http);
    }
  };

  return (request, response, app: AppState) => {
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
