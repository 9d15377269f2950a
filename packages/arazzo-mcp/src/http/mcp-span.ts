import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Attributes,
  endServerSpan,
  mcpParentContext,
  SpanKind,
  startSpan,
  withSpan,
} from '@mcp-identity/common';

/*
 * The MCP SERVER span of one POST `/mcp` (OpenTelemetry semantic conventions for MCP), made
 * only while tracing is on: named `{mcp.method.name} {target}`, child of the context in the
 * request's `params._meta` or else of the HTTP request's (`mcpParentContext`), and active
 * while the call runs, so that the workflow's HTTP requests are its children.
 */

/** `_meta` key of a modern request's protocol version (MCP 2026-07-28). */
const VERSION_META = 'io.modelcontextprotocol/protocolVersion';

interface Message {
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; _meta?: Record<string, unknown> };
}

/** Runs `serve` for one POST inside its span, which ends once the answer is over. */
export async function inMcpSpan(
  request: IncomingMessage,
  response: ServerResponse,
  body: unknown,
  serve: () => Promise<void>,
): Promise<void> {
  const message: Message =
    body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Message) : {};
  const method = typeof message.method === 'string' ? message.method : undefined;
  const target = typeof message.params?.name === 'string' ? message.params.name : undefined;
  const meta = message.params?._meta;
  const { parent, links } = mcpParentContext(meta, request.headers);
  // The route is one fixed path: the request's, less any query.
  const route = (request.url ?? '').split('?', 1)[0] as string;
  const attributes: Attributes = { 'http.request.method': 'POST', 'http.route': route };
  if (method !== undefined) attributes['mcp.method.name'] = method;
  if (method === 'tools/call' && target !== undefined) {
    attributes['gen_ai.tool.name'] = target;
    attributes['gen_ai.operation.name'] = 'execute_tool';
  } else if (method === 'prompts/get' && target !== undefined) {
    attributes['gen_ai.prompt.name'] = target;
  }
  if (typeof message.id === 'string' || typeof message.id === 'number') {
    attributes['jsonrpc.request.id'] = String(message.id);
  }
  const version = meta?.[VERSION_META] ?? request.headers['mcp-protocol-version'];
  if (typeof version === 'string') attributes['mcp.protocol.version'] = version;
  const session = request.headers['mcp-session-id'];
  if (typeof session === 'string') attributes['mcp.session.id'] = session;
  const named = method && target !== undefined && method !== 'resources/read';
  const span = startSpan(named ? `${method} ${target}` : (method ?? `POST ${route}`), {
    kind: SpanKind.SERVER,
    parent,
    links,
    attributes,
  });
  // The transport may still be writing the answer when the call returns: the span ends with it.
  const end = () => endServerSpan(span, response.headersSent ? response.statusCode : undefined);
  try {
    await withSpan(span, serve);
  } finally {
    if (response.writableFinished || response.destroyed) end();
    else response.once('close', end);
  }
}
