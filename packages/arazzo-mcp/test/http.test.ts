import type { WorkflowResult } from '@mcp-identity/arazzo';
import {
  createArazzoMcpApp,
  createToolCatalog,
  type WorkflowRunner,
} from '@mcp-identity/arazzo-mcp';
import { createLogger } from '@mcp-identity/common';
import { startTestServer } from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GET_USER_WORKFLOWS } from './support/get-user-workflow.js';

const workflows = GET_USER_WORKFLOWS;

/** Answers from a table; a run for `wait-for-<id>` finishes only after the run for `<id>`. */
function tableRunner(): WorkflowRunner {
  const finished = new Map<string, () => void>();
  const done = (id: string) =>
    new Promise<void>((resolve) => {
      finished.set(id, resolve);
    });
  const waits = new Map<string, Promise<void>>();
  return {
    async run(_workflowId, inputs): Promise<WorkflowResult> {
      const id = String(inputs.userId);
      if (id === 'down') {
        return {
          kind: 'error',
          message: 'step "get": GET http://127.0.0.1:9/Users/down: connection refused',
          failure: { kind: 'connection', applied: 'no', retrySafe: true },
        };
      }
      if (id.startsWith('wait-for-')) {
        const other = id.slice('wait-for-'.length);
        if (!waits.has(other)) waits.set(other, done(other));
        await waits.get(other);
      } else {
        if (!waits.has(id)) waits.set(id, done(id));
        finished.get(id)?.();
      }
      return { kind: 'completed', outputs: { user: { id, userName: `user-${id}` } } };
    },
  };
}

const logger = createLogger({ level: 'silent', pretty: false });
let baseUrl: string;
let client: Client;

async function connect(url: string): Promise<Client> {
  const mcp = new Client({ name: 'arazzo-mcp-test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  return mcp;
}

beforeAll(async () => {
  const catalog = createToolCatalog(workflows, tableRunner());
  const server = await startTestServer(createArazzoMcpApp({ catalog, logger }));
  baseUrl = server.url;
  client = await connect(baseUrl);
});

afterAll(async () => {
  await client.close();
});

const text = (result: unknown) =>
  ((result as { content: { text: string }[] }).content[0] as { text: string }).text;

describe('Streamable HTTP transport', () => {
  it('lists the tools with exactly our schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools).toEqual([
      {
        name: 'get_user',
        description: 'Get one user by id',
        inputSchema: {
          type: 'object',
          properties: { userId: { type: 'string' } },
          required: ['userId'],
        },
        outputSchema: { type: 'object', properties: { user: {} }, additionalProperties: false },
      },
    ]);
  });

  it('calls a tool and returns the Python text plus structured outputs', async () => {
    const result = await client.callTool({ name: 'get_user', arguments: { userId: 'u1' } });
    expect(text(result)).toBe(
      "Workflow Success. Outputs: {'user': {'id': 'u1', 'userName': 'user-u1'}}",
    );
    expect(result.structuredContent).toEqual({ user: { id: 'u1', userName: 'user-u1' } });
    expect(result.isError).toBe(false);
  });

  it('returns Workflow Error as a tool error without structured content, accepted by the client', async () => {
    const result = await client.callTool({ name: 'get_user', arguments: { userId: 'down' } });
    expect(text(result)).toBe(
      'Workflow Error: step "get": GET http://127.0.0.1:9/Users/down: connection refused\nFailure: connection. Applied: no — nothing was changed; retrying is safe.',
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
  });

  it('fails schema validation for a missing or mistyped argument', async () => {
    const missing = await client.callTool({ name: 'get_user', arguments: {} });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain("missing required argument 'userId'");
    const mistyped = await client.callTool({ name: 'get_user', arguments: { userId: 7 } });
    expect(mistyped.isError).toBe(true);
    expect(text(mistyped)).toContain("argument 'userId' must be string");
  });

  it('answers an unknown tool with JSON-RPC error -32602', async () => {
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });
  });

  it('runs calls concurrently', async () => {
    // The first call can only finish after the second has run: serialised calls would hang.
    const [first, second] = await Promise.all([
      client.callTool({ name: 'get_user', arguments: { userId: 'wait-for-b' } }),
      client.callTool({ name: 'get_user', arguments: { userId: 'b' } }),
    ]);
    expect(text(first)).toContain("'id': 'wait-for-b'");
    expect(text(second)).toContain("'id': 'b'");
  });

  // An initialize asking for a version the server does not negotiate there (an unknown one, or
  // the modern 2026-07-28, which initialize never selects) gets the lifecycle's counter-offer.
  it.each([
    ['2025-06-18', '2025-06-18'],
    ['2025-11-25', '2025-11-25'],
    ['1999-01-01', '2025-11-25'],
    ['2026-07-28', '2025-11-25'],
  ])('answers an initialize asking for %s with protocol version %s', async (asked, version) => {
    const response = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: asked,
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    const body = (await response.json()) as { result: { protocolVersion: string } };
    expect(body.result.protocolVersion).toBe(version);
  });

  it.each(['GET', 'DELETE'])('answers %s /mcp with 405 and a JSON-RPC error', async (method) => {
    const response = await fetch(`${baseUrl}/mcp`, { method });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000 },
    });
  });

  it('answers malformed JSON with a JSON-RPC parse error', async () => {
    const response = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32700 } });
  });

  it('answers params that do not fit the method with -32602 naming the member', async () => {
    const response = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'get_user', arguments: 'userId=u1' },
      }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: {
        code: -32602,
        message:
          'Invalid params for tools/call: params.arguments: expected record, received string',
      },
    });
  });

  it('keeps the JSON-RPC shape when the framework refuses a Content-Type', async () => {
    const response = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json, text/plain' },
      body: '{}',
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: expect.stringContaining('Unsupported Media Type') },
    });
  });

  it('reports health', async () => {
    const response = await fetch(`${baseUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });
});

describe('a guard mounted in front of /mcp', () => {
  it('runs before every /mcp request and leaves /health alone', async () => {
    const catalog = createToolCatalog(workflows, tableRunner());
    const app = createArazzoMcpApp({
      catalog,
      logger,
      mcpGuard: async (request, reply) => {
        if (request.headers.authorization !== 'Bearer let-me-in') {
          await reply.code(401).send({ error: 'unauthorized' });
        }
      },
    });
    const server = await startTestServer(app);
    const refused = await fetch(`${server.url}/mcp`, { method: 'POST' });
    expect(refused.status).toBe(401);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const mcp = new Client({ name: 'guarded', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: 'Bearer let-me-in' } },
      }),
    );
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual(['get_user']);
    await mcp.close();
  });
});
