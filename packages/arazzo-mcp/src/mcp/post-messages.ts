import type { IncomingMessage } from 'node:http';
import { JSON_RPC } from '@mcp-identity/common';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/core';
import {
  isInitializeRequest,
  isJsonContentType,
  type JSONRPCMessage,
  type JSONRPCRequest,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';

/** The SDK's Streamable HTTP transport's bound on a legacy batch (not exported by the SDK). */
const MAX_BATCH_SIZE = 100;

/** What the MCP SDK's transport answers HTTP-level refusals with (a server-defined code). */
export const TRANSPORT_ERROR = -32000;

/** An HTTP-level refusal of a POST, with the JSON-RPC error the body carries. */
export interface Refusal {
  status: number;
  code: number;
  message: string;
}

const refuse = (status: number, code: number, message: string) => ({
  refusal: { status, code, message },
});

/**
 * The JSON-RPC messages of one legacy-era POST (no per-request `_meta` envelope, see
 * `routeExchange`) to a stateless Streamable HTTP endpoint, or why the POST is refused: the
 * checks the MCP transport specification (2025-06-18, "Sending Messages to the Server" and
 * "Protocol Version Header") asks of a server without sessions, in the order and
 * with the status codes, error codes and messages of the MCP SDK's own transport, so clients
 * see the same answers. Messages are validated with the SDK's `JSONRPCMessageSchema`.
 */
export function postMessages(
  request: IncomingMessage,
  parsedBody: unknown,
): { messages: JSONRPCMessage[]; refusal?: undefined } | { refusal: Refusal } {
  const accept = request.headers.accept;
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
    return refuse(
      406,
      TRANSPORT_ERROR,
      'Not Acceptable: Client must accept both application/json and text/event-stream',
    );
  }
  if (!isJsonContentType(request.headers['content-type'])) {
    return refuse(
      415,
      TRANSPORT_ERROR,
      'Unsupported Media Type: Content-Type must be application/json',
    );
  }
  if (Array.isArray(parsedBody) && parsedBody.length > MAX_BATCH_SIZE) {
    return refuse(
      400,
      JSON_RPC.invalidRequest,
      `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`,
    );
  }
  const batch = Array.isArray(parsedBody) ? parsedBody : [parsedBody];
  const messages: JSONRPCMessage[] = [];
  for (const candidate of batch) {
    if (isPlainRequest(candidate)) {
      messages.push(candidate);
      continue;
    }
    const parsed = JSONRPCMessageSchema.safeParse(candidate);
    if (!parsed.success) {
      return refuse(400, JSON_RPC.parseError, 'Parse error: Invalid JSON-RPC message');
    }
    messages.push(parsed.data);
  }
  // The method test first spares a schema parse of every message that is not an initialize.
  const initializes = messages.some(
    (message) =>
      'method' in message && message.method === 'initialize' && isInitializeRequest(message),
  );
  if (initializes) {
    if (messages.length > 1) {
      return refuse(
        400,
        JSON_RPC.invalidRequest,
        'Invalid Request: Only one initialization request is allowed',
      );
    }
    return { messages };
  }
  const version = request.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) {
    return refuse(
      400,
      TRANSPORT_ERROR,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
  }
  return { messages };
}

/**
 * A request as clients send it, which the SDK's `JSONRPCMessageSchema` accepts unchanged:
 * `jsonrpc` "2.0", a string or integer `id`, a string `method`, optional object `params`
 * without `_meta`, and no other member. Checked without the schema, which would build a copy;
 * anything else is left to it.
 */
function isPlainRequest(candidate: unknown): candidate is JSONRPCRequest {
  if (typeof candidate !== 'object' || candidate === null || Array.isArray(candidate)) {
    return false;
  }
  const message = candidate as Record<string, unknown>;
  for (const key in message) {
    if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return false;
  }
  const { id, params } = message;
  return (
    message.jsonrpc === '2.0' &&
    typeof message.method === 'string' &&
    (typeof id === 'string' || Number.isSafeInteger(id)) &&
    (params === undefined ||
      (typeof params === 'object' &&
        params !== null &&
        !Array.isArray(params) &&
        !('_meta' in params)))
  );
}
