import { packageVersion } from '@mcp-identity/common';
import {
  type McpServerFactory,
  Server,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';
import type { ToolCatalog } from '../tools/catalog.js';

export interface ServerInfo {
  name: string;
  version: string;
}

export const DEFAULT_SERVER_INFO: ServerInfo = {
  name: 'arazzo-mcp',
  version: packageVersion(import.meta.url),
};

/** The modern revision (per-request `_meta`, `server/discover`; MCP 2026-07-28 versioning). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/**
 * Every protocol version served, modern first: 2026-07-28 through `server/discover` and the
 * per-request envelope, and the SDK's legacy ones (2025-11-25, 2025-06-18 and older) through
 * `initialize`. An `initialize` naming another version is answered with the first legacy entry,
 * 2025-11-25 (the lifecycle's counter-offer); `initialize` never selects a modern revision.
 */
export const SERVED_PROTOCOL_VERSIONS: readonly string[] = [
  MODERN_PROTOCOL_VERSION,
  ...SUPPORTED_PROTOCOL_VERSIONS,
];

/**
 * How long a client may keep `tools/list` and `server/discover` (MCP 2026-07-28 caching): the
 * catalog is fixed for the life of the process and identical for every caller, so the answer
 * is public. A minute bounds how long a client keeps an old list after a redeploy.
 */
const CACHE_HINT = { ttlMs: 60_000, cacheScope: 'public' } as const;

/**
 * An MCP server exposing the catalog's tools, for either era. The low-level Server is used so
 * that the JSON Schemas clients see are exactly ours. Legacy HTTP exchanges share one instance
 * (McpExchangeRouter); a modern exchange, and a stdio connection, get one each from
 * `mcpServerFactory`.
 */
export function createMcpServer(
  catalog: ToolCatalog,
  info: ServerInfo = DEFAULT_SERVER_INFO,
): Server {
  const server = new Server(info, {
    capabilities: { tools: { listChanged: false } },
    supportedProtocolVersions: [...SERVED_PROTOCOL_VERSIONS],
    cacheHints: { 'tools/list': CACHE_HINT, 'server/discover': CACHE_HINT },
  });
  server.setRequestHandler('tools/list', () => ({ tools: catalog.list() }));
  server.setRequestHandler('tools/call', (request, ctx) =>
    catalog.call(request.params.name, request.params.arguments, ctx.http?.authInfo),
  );
  return server;
}

/** A fresh server per serving unit, as the SDK's modern and stdio entries ask. */
export function mcpServerFactory(
  catalog: ToolCatalog,
  info: ServerInfo = DEFAULT_SERVER_INFO,
): McpServerFactory {
  return () => createMcpServer(catalog, info);
}
