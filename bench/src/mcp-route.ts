import { serveStatelessMcp } from '@mcp-identity/common/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FastifyInstance } from 'fastify';

/**
 * Mounts a stateless MCP endpoint (official SDK, JSON responses) with one cheap
 * tool: the benchmarks' stand-in upstream, so they measure what sits in front.
 */
export function mountBenchMcp(app: FastifyInstance, tool: { name: string; text: string }): void {
  app.post('/mcp', (request, reply) => {
    const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
    server.registerTool(tool.name, { description: `Answers ${tool.text}.` }, async () => ({
      content: [{ type: 'text', text: tool.text }],
    }));
    return serveStatelessMcp(server, request, reply);
  });
}
