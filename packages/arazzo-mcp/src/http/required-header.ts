import type { IncomingHttpHeaders } from 'node:http';
import { jsonRpcError, secretMatcher } from '@mcp-identity/common';
import type { onRequestAsyncHookHandler } from 'fastify';

/** A shared secret every `/mcp` request must carry (the gateway's upstream credential). */
export interface RequiredHeader {
  /** Header name, e.g. `X-Gateway-Auth`. */
  name: string;
  value: string;
}

/** The environment variable holding the value when no `--require-header-file` is given. */
export const REQUIRED_HEADER_VALUE_ENV = 'ARAZZO_MCP_REQUIRED_HEADER_VALUE';

/** RFC 9110 §5.1: a field name is a token. */
export const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

// Not a code the MCP or JSON-RPC specifications reserve: the server-defined range.
const UNAUTHORIZED_CODE = -32001;

/**
 * Whether a request's headers carry the required value, compared in constant time; a repeated
 * header (an array) never matches.
 */
export function requiredHeaderCheck(
  required: RequiredHeader,
): (headers: IncomingHttpHeaders) => boolean {
  const name = required.name.toLowerCase();
  const matches = secretMatcher(required.value);
  return (headers) => {
    const sent = headers[name];
    return typeof sent === 'string' && matches(sent);
  };
}

/**
 * Refuses a request that lacks the header value with 401 and a JSON-RPC error body. It runs
 * as an `onRequest` hook, so the body of a refused request is never read.
 */
export function requireHeader(required: RequiredHeader): onRequestAsyncHookHandler {
  const carries = requiredHeaderCheck(required);
  const message = `Unauthorized: this server answers only requests with a valid ${required.name} header`;
  return async (request, reply) => {
    if (carries(request.headers)) return;
    request.log.warn(
      {
        header: required.name,
        present: request.headers[required.name.toLowerCase()] !== undefined,
      },
      'refused /mcp request',
    );
    await reply.code(401).send(jsonRpcError(null, UNAUTHORIZED_CODE, message));
  };
}
