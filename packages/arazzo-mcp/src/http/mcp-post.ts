import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AppState, JSON_RPC, jsonRpcError, tracingEnabled } from '@mcp-identity/common';
import { type McpExchangeRouter, writeJson } from '../mcp/exchange-router.js';
import { inMcpSpan } from './mcp-span.js';

/** What Fastify's JSON replies carry, so that answers written outside it look the same. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Where a POST that fails unexpectedly is reported (a pino logger). */
export interface FailureLog {
  error(obj: object, msg: string): void;
}

/** A JSON-RPC error answer with `id: null`, written in one piece. */
export function sendJsonRpcError(
  response: ServerResponse,
  status: number,
  code: number,
  message: string,
  app?: AppState,
): void {
  writeJson(response, status, jsonRpcError(null, code, message), app, JSON_CONTENT_TYPE);
}

/**
 * Serves one POST `/mcp` whose body has been read as text (`undefined`: none): a JSON body is
 * parsed here so that malformed JSON gets a JSON-RPC parse error (400); anything else is left
 * to the router, which answers 415 for another media type. While tracing, the call runs in its
 * MCP span (`inMcpSpan`). An unexpected failure is logged
 * (the error only: never the request's headers) and answered 500.
 */
export async function serveMcpPost(
  router: McpExchangeRouter,
  request: IncomingMessage,
  response: ServerResponse,
  body: string | undefined,
  log: FailureLog,
  app?: AppState,
): Promise<void> {
  let parsedBody: unknown;
  const contentType = String(request.headers['content-type'] ?? '').toLowerCase();
  if (contentType.includes('application/json') && typeof body === 'string') {
    try {
      parsedBody = JSON.parse(body);
    } catch {
      sendJsonRpcError(response, 400, JSON_RPC.parseError, 'Parse error: invalid JSON', app);
      return;
    }
  }
  try {
    const serve = () => router.handle(request, response, parsedBody, app);
    await (tracingEnabled() ? inMcpSpan(request, response, parsedBody, serve) : serve());
  } catch (error) {
    log.error({ err: error }, 'MCP request failed');
    if (!response.headersSent) {
      sendJsonRpcError(response, 500, JSON_RPC.internalError, 'Internal server error', app);
    }
  }
}
