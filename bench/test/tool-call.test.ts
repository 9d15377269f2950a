import { createApp, createLogger } from '@mcp-identity/common';
import { freePort, serveStatelessMcp, startTestServer } from '@mcp-identity/common/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { classifyOutcome } from '../src/kit/call-class.js';
import { callTool } from '../src/kit/tool-call.js';

/**
 * A real MCP endpoint (official SDK server) whose path decides how it misbehaves: `/ok` answers,
 * `/refuse` answers 503 to everything, `/drop` and `/bad-gateway` answer `initialize` but drop
 * the connection of, or answer 502 to, the `tools/call` itself.
 */
async function startEndpoint(): Promise<string> {
  const app = createApp({ logger: createLogger({ level: 'silent' }) });
  const serve = (
    request: Parameters<typeof serveStatelessMcp>[1],
    reply: Parameters<typeof serveStatelessMcp>[2],
  ) => {
    const server = new McpServer({ name: 'soak-test', version: '1.0.0' });
    server.registerTool('create_user', { description: 'Creates.' }, async () => ({
      content: [{ type: 'text', text: "Workflow Success. Outputs: {'id': 'u1'}" }],
      isError: false,
    }));
    return serveStatelessMcp(server, request, reply);
  };
  const isCall = (body: unknown) => (body as { method?: string }).method === 'tools/call';
  app.post('/ok/mcp', serve);
  app.post('/refuse/mcp', async (_request, reply) =>
    reply.code(503).header('retry-after', '1').send({ error: 'busy' }),
  );
  app.post('/drop/mcp', async (request, reply) => {
    if (isCall(request.body)) return request.raw.socket.destroy();
    return serve(request, reply);
  });
  app.post('/bad-gateway/mcp', async (request, reply) => {
    if (isCall(request.body)) return reply.code(502).send({ error: 'upstream unreachable' });
    return serve(request, reply);
  });
  return (await startTestServer(app)).url;
}

describe('a soak tool call', () => {
  let base = '';
  beforeAll(async () => {
    base = await startEndpoint();
  });
  const call = (path: string) => callTool(`${base}${path}/mcp`, 'token', 'create_user', {});

  it('returns the tool result, which is acknowledged', async () => {
    const outcome = await call('/ok');
    expect(outcome).toMatchObject({ kind: 'result', result: { isError: false } });
    expect(classifyOutcome(outcome, { writes: true }).class).toBe('acknowledged');
  });

  it('tells a call that never left (connection refused) from one whose answer was lost', async () => {
    const closed = await callTool(
      `http://127.0.0.1:${await freePort()}/mcp`,
      'token',
      'create_user',
      {},
    );
    expect(closed.kind).toBe('not-sent');
    expect(classifyOutcome(closed, { writes: true }).class).toBe('failed');

    const dropped = await call('/drop');
    expect(dropped.kind).toBe('lost');
    expect(classifyOutcome(dropped, { writes: true }).class).toBe('unknown');
    // A read that got no answer changed nothing: it failed.
    expect(classifyOutcome(dropped, { writes: false }).class).toBe('failed');
  });

  it('counts a 503 as refused, and a 502 to the call itself as unknown', async () => {
    const refused = await call('/refuse');
    expect(refused).toMatchObject({ kind: 'http', status: 503, during: 'connect' });
    expect(classifyOutcome(refused, { writes: true }).class).toBe('refused');

    const badGateway = await call('/bad-gateway');
    expect(badGateway).toMatchObject({ kind: 'http', status: 502, during: 'call' });
    expect(classifyOutcome(badGateway, { writes: true }).class).toBe('unknown');
  });
});
