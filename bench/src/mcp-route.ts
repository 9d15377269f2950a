import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance } from 'fastify';

/**
 * Mounts a stateless MCP endpoint (official SDK, JSON responses) with one cheap
 * tool: the benchmarks' stand-in upstream, so they measure what sits in front.
 */
export function mountBenchMcp(app: FastifyInstance, tool: { name: string; text: string }): void {
  app.post('/mcp', async (request, reply) => {
    const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
    server.registerTool(tool.name, { description: `Answers ${tool.text}.` }, async () => ({
      content: [{ type: 'text', text: tool.text }],
    }));
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
}
