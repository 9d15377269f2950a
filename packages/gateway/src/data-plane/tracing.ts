import type { ServerResponse } from 'node:http';
import {
  type Attributes,
  contextOf,
  endServerSpan,
  httpClientAttributes,
  mcpParentContext,
  type Span,
  SpanKind,
  startSpan,
  traceHeaders,
} from '@mcp-identity/common';
import type { McpCall } from './jsonrpc.js';
import type { McpExchange } from './pipeline.js';

/*
 * The spans of one request to a proxy's `<context>/mcp`, made only while tracing is on: a
 * SERVER span named as the OpenTelemetry MCP conventions say (`tools/call search_users`), with
 * the gateway's decision under `mcp_identity.*`, and a CLIENT span for each request the gateway
 * makes for it (the upstream's, the token exchange's), each carrying its `traceparent`. No
 * attribute holds a header value, a token or a body.
 */

/**
 * Traces an exchange: its SERVER span ends when the answer is over (the response closes), by
 * which time the audit line has recorded the outcome.
 */
export function traceExchange(exchange: McpExchange, response: ServerResponse): void {
  response.once('close', () => endExchangeSpan(exchange, response));
}

/**
 * The exchange's SERVER span, started the first time something needs it (a request made for
 * it, or the audit line) and dated from the request's arrival: its parent is in the body
 * (`params._meta`) as much as in the headers, and the body is read only after the headers
 * are decided on.
 */
export function exchangeSpan(exchange: McpExchange): Span {
  if (exchange.span) return exchange.span;
  const { call, headers, runtime } = exchange;
  const { parent, links } = mcpParentContext(metaOf(call), headers);
  exchange.span = startSpan(spanName(call, `${exchange.httpMethod} ${runtime.context}/mcp`), {
    kind: SpanKind.SERVER,
    parent,
    links,
    startTime: exchange.started,
    attributes: {
      'http.request.method': exchange.httpMethod,
      'http.route': `${runtime.context}/mcp`,
      'mcp_identity.proxy': runtime.id,
    },
  });
  return exchange.span;
}

/** `params._meta` of a call, read only while tracing (it costs a parse of `params`). */
function metaOf(call: McpCall | undefined): unknown {
  return call?.params?._meta;
}

/**
 * `{mcp.method.name} {target}` with the tool's or prompt's name; a resource's URI is left out
 * (high cardinality, the MCP conventions). A request that is no call is named by its route.
 */
function spanName(call: McpCall | undefined, route: string): string {
  if (!call?.method) return route;
  return call.target && call.method !== 'resources/read'
    ? `${call.method} ${call.target}`
    : call.method;
}

/** The MCP attributes of a call (OpenTelemetry semantic conventions for MCP). */
function callAttributes(exchange: McpExchange, call: McpCall): Attributes {
  const attributes: Attributes = { 'mcp.method.name': call.method };
  if (call.method === 'tools/call') {
    attributes['gen_ai.tool.name'] = call.target;
    attributes['gen_ai.operation.name'] = 'execute_tool';
  } else if (call.method === 'prompts/get') {
    attributes['gen_ai.prompt.name'] = call.target;
  } else if (call.method === 'resources/read') {
    attributes['mcp.resource.uri'] = call.target;
  }
  if (call.id !== null) attributes['jsonrpc.request.id'] = String(call.id);
  const version = exchange.modernVersion ?? exchange.headers['mcp-protocol-version'];
  if (typeof version === 'string') attributes['mcp.protocol.version'] = version;
  const session = exchange.headers['mcp-session-id'];
  if (typeof session === 'string') attributes['mcp.session.id'] = session;
  return attributes;
}

function endExchangeSpan(exchange: McpExchange, response: ServerResponse): void {
  const span = exchangeSpan(exchange);
  const { call } = exchange;
  if (call?.method) {
    span.updateName(spanName(call, ''));
    span.setAttributes(callAttributes(exchange, call));
  }
  const record = exchange.auditRecord();
  const attributes: Attributes = { 'mcp_identity.decision': record.decision };
  if (record.clientId !== undefined) attributes['mcp_identity.client_id'] = record.clientId;
  if (record.reason !== undefined) attributes['mcp_identity.reason'] = record.reason;
  if (record.rule !== undefined) attributes['mcp_identity.rule'] = record.rule;
  if (record.missingScopes) attributes['mcp_identity.missing_scopes'] = [...record.missingScopes];
  if (record.upstreamStatus !== undefined) {
    attributes['mcp_identity.upstream_status'] = record.upstreamStatus;
  }
  if (record.upstreamFailure !== undefined) {
    attributes['mcp_identity.upstream_failure'] = record.upstreamFailure;
  }
  if (record.exchangeFailure !== undefined) {
    attributes['mcp_identity.exchange_failure'] = record.exchangeFailure;
  }
  span.setAttributes(attributes);
  const status = response.headersSent ? response.statusCode : undefined;
  endServerSpan(span, status, record.upstreamFailure);
}

/** A CLIENT span for a request made for `exchange` to `url`, and the headers that carry it. */
export function clientSpan(
  exchange: McpExchange,
  method: string,
  url: URL,
): { span: Span; headers: Record<string, string> } {
  const parent = exchangeSpan(exchange);
  const span = startSpan(method, {
    kind: SpanKind.CLIENT,
    parent: contextOf(parent),
    attributes: httpClientAttributes(method, url),
  });
  return { span, headers: traceHeaders(span) };
}

/**
 * The body to forward for a call whose `params._meta` carries trace context: the same message
 * with the upstream request's context in its place; any other body unchanged (and unparsed).
 */
export function withTraceMeta(
  body: Buffer,
  call: McpCall,
  headers: Record<string, string>,
): Buffer {
  const meta = metaOf(call);
  if (meta === null || typeof meta !== 'object' || !('traceparent' in meta)) return body;
  const message = JSON.parse(body.toString('utf8')) as {
    params: { _meta: Record<string, unknown> };
  };
  const target = message.params._meta;
  delete target.tracestate;
  Object.assign(target, headers);
  return Buffer.from(JSON.stringify(message));
}
