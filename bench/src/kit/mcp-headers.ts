import { TOOL_NAME } from './fast-upstream.js';

/** Headers of an MCP Streamable HTTP POST (MCP 2025-06-18, transports). */
export const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

/**
 * Headers of the same POST in MCP 2026-07-28: the version, and the method and tool mirrored
 * from the body (transports/streamable-http, "Request Metadata"), which a gateway can decide on
 * before it reads the body.
 */
export const MODERN_MCP_HEADERS = {
  ...MCP_HEADERS,
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': TOOL_NAME,
};
