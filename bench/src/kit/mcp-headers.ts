/** Headers of an MCP Streamable HTTP POST (MCP 2025-06-18, transports). */
export const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};
