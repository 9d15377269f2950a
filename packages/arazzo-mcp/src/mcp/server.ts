import { packageVersion } from '@mcp-identity/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCatalog } from '../tools/catalog.js';

export interface ServerInfo {
  name: string;
  version: string;
}

export const DEFAULT_SERVER_INFO: ServerInfo = {
  name: 'arazzo-mcp',
  version: packageVersion(import.meta.url),
};

/**
 * An MCP server exposing the catalog's tools. The low-level Server is used so that the JSON
 * Schemas clients see are exactly ours. One per process: HTTP exchanges share it through
 * McpExchangeRouter.
 */
export function createMcpServer(
  catalog: ToolCatalog,
  info: ServerInfo = DEFAULT_SERVER_INFO,
): Server {
  const server = new Server(info, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: catalog.list() }));
  server.setRequestHandler(CallToolRequestSchema, (request) =>
    catalog.call(request.params.name, request.params.arguments),
  );
  return server;
}
