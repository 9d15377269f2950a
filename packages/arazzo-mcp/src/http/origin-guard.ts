import { JSON_RPC, jsonRpcError, type OriginPolicy } from '@mcp-identity/common';
import type { onRequestAsyncHookHandler } from 'fastify';

/**
 * Refuses a request to one of `paths` whose `Origin` the policy does not allow, with 403 and
 * a JSON-RPC error body, before anything else looks at it. The MCP Streamable HTTP transport
 * requires servers to validate Origin against DNS rebinding (a page on an attacker's domain,
 * re-resolved to 127.0.0.1, reaching a local server). A request without Origin (a non-browser
 * client) passes.
 */
export function refuseForeignOrigins(
  policy: OriginPolicy,
  paths: readonly string[],
): onRequestAsyncHookHandler {
  const guarded = new Set(paths);
  return async (request, reply) => {
    if (!guarded.has(request.routeOptions.url ?? '')) return;
    const { origin, host } = request.headers;
    if (policy.check(origin, host)) return;
    request.log.warn({ origin }, 'refused a request from a foreign origin');
    await reply
      .code(403)
      .send(jsonRpcError(null, JSON_RPC.invalidRequest, 'Forbidden: Origin not allowed'));
  };
}
