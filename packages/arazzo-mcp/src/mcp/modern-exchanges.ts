import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppState } from '@mcp-identity/common';
import {
  type AuthInfo,
  createMcpHandler,
  type McpServerFactory,
} from '@modelcontextprotocol/server';

/** Modern-era (MCP 2026-07-28) exchanges, answered by the SDK's own entry. */
export interface ModernExchanges {
  /** Serves one POST whose body has been parsed; the request's `auth` reaches the handlers. */
  serve(
    request: IncomingMessage & { auth?: AuthInfo },
    response: ServerResponse,
    parsedBody: unknown,
    app?: AppState,
  ): Promise<void>;
  /** Aborts exchanges in flight. */
  close(): Promise<void>;
}

/**
 * The SDK's dual-era HTTP entry, `createMcpHandler`, restricted to the modern era (its legacy
 * leg is McpExchangeRouter's): it checks the envelope, the mirrored `Mcp-Method`/`Mcp-Name`
 * headers against the body (`HeaderMismatch`, -32020), answers an unsupported modern version
 * with `UnsupportedProtocolVersionError` (-32022) naming the supported ones, answers
 * `server/discover`, adds `resultType`, the server's identity and the cache fields, and serves
 * each request with a fresh server from `factory`, as the stateless revision asks. The SDK's
 * entry is web-standard (Request → Response); this adapts the node:http request, whose body
 * has already been read and parsed under the app's limits, and the response.
 */
export function createModernExchanges(
  factory: McpServerFactory,
  onerror?: (error: Error) => void,
): ModernExchanges {
  const handler = createMcpHandler(factory, { legacy: 'reject', onerror });
  return {
    async serve(request, response, parsedBody, app) {
      const gone = new AbortController();
      response.once('close', () => {
        if (!response.writableFinished) gone.abort();
      });
      const answer = await handler.fetch(
        new Request(new URL(request.url ?? '/', 'http://mcp.invalid'), {
          method: 'POST',
          headers: webHeaders(request),
          signal: gone.signal,
        }),
        { parsedBody, ...(request.auth !== undefined && { authInfo: request.auth }) },
      );
      await writeAnswer(answer, response, app);
    },
    close: () => handler.close(),
  };
}

function webHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

/**
 * Copies the SDK's answer to the node:http response: a JSON answer in one write, as the legacy
 * path writes its own; an SSE stream chunk by chunk as it comes.
 */
async function writeAnswer(
  answer: Response,
  response: ServerResponse,
  app: AppState | undefined,
): Promise<void> {
  if (response.destroyed) {
    await answer.body?.cancel();
    return;
  }
  // Node answers `connection: close` and closes the connection after this answer.
  if (app?.closing) response.shouldKeepAlive = false;
  const headers: Record<string, string> = {};
  answer.headers.forEach((value, name) => {
    headers[name] = value;
  });
  if (answer.body === null || !headers['content-type']?.startsWith('text/event-stream')) {
    const text = await answer.text();
    response.writeHead(answer.status, { ...headers, 'content-length': Buffer.byteLength(text) });
    response.end(text);
    return;
  }
  response.writeHead(answer.status, headers);
  for await (const chunk of answer.body) {
    if (response.destroyed) break;
    response.write(chunk);
  }
  response.end();
}
