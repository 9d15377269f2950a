import { lineLogger, useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID } from './fixtures/key-manager.js';
import { connectClient, json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';
import { startUpstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-proxy-');

describe('data plane', () => {
  const logLines: Array<Record<string, unknown>> = [];
  const auth = { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } };
  const authz = {
    name: 'mcp-authz',
    version: 'v1',
    params: { tools: [{ name: 'delete_user', scopes: { allOf: ['internal_user_mgt_delete'] } }] },
  };
  const stack = useProxyStack({
    dataDir: tempDir,
    gateway: { logger: lineLogger((line) => logLines.push(line)) },
    proxies: ({ mcpUrl, streamUrl }) => [
      proxyDefinition('open-v1.0', '/open', mcpUrl),
      proxyDefinition('stream-v1.0', '/stream', streamUrl, [auth]),
      proxyDefinition('dead-v1.0', '/dead', 'http://127.0.0.1:1/mcp'),
      proxyDefinition('audited-v1.0', '/audited', mcpUrl, [auth, authz]),
    ],
  });

  it('passes MCP through untouched when a proxy has no policies (HTTPS, SDK client)', async () => {
    const client = await connectClient(`${stack.fx.gateway.publicUrl}/open/mcp`);
    const tools = await client.listTools();
    expect(tools.tools.length).toBe(4);
    const result = await client.callTool({ name: 'delete_user', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'delete_user done' }]);
    await client.close();
  });

  it('passes mcp-session-id, mcp-protocol-version and last-event-id through, and Authorization too', async () => {
    const response = await postMcp(
      `${stack.fx.gateway.plainUrl}/open/mcp`,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      {
        'mcp-session-id': 'session-123',
        'mcp-protocol-version': '2025-06-18',
        'last-event-id': 'evt-9',
        authorization: 'Bearer opaque',
      },
    );
    await response.text();
    expect(stack.upstream.lastHeaders).toMatchObject({
      'mcp-session-id': 'session-123',
      'mcp-protocol-version': '2025-06-18',
      'last-event-id': 'evt-9',
      authorization: 'Bearer opaque',
    });
  });

  it('streams SSE events to the client before the upstream stream ends', async () => {
    const token = await stack.km.sign({});
    const response = await postMcp(
      `${stack.fx.gateway.plainUrl}/stream/mcp`,
      toolCall('search_users'),
      {
        authorization: `Bearer ${token}`,
      },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('\n\n')) {
      const { value } = await reader.read();
      received += decoder.decode(value);
    }
    // The upstream is still holding its stream open: the first event arrived on its own.
    expect(received).toContain('notifications/progress');
    expect(received).not.toContain('"result"');
    stack.upstream.releaseStream();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received += decoder.decode(value);
    }
    expect(received).toContain('"result":{}');
  });

  it('answers 502 with a JSON-RPC error carrying the request id when the upstream is unreachable', async () => {
    const response = await postMcp(`${stack.fx.gateway.plainUrl}/dead/mcp`, {
      jsonrpc: '2.0',
      id: 'req-7',
      method: 'ping',
    });
    expect(response.status).toBe(502);
    const body = await json(response);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 'req-7', error: { code: -32000 } });
  });

  it('logs proxy requests at warn and above only, each line with its request id', async () => {
    const response = await postMcp(`${stack.fx.gateway.plainUrl}/dead/mcp`, {
      jsonrpc: '2.0',
      id: 'req-8',
      method: 'ping',
    });
    expect(response.status).toBe(502);
    const failures = logLines.filter((l) => l.msg === 'upstream request failed');
    expect(failures.at(-1)).toMatchObject({ level: 40, proxy: 'dead-v1.0' });
    expect(failures.at(-1)?.reqId).toEqual(expect.any(String));
    // Fastify's per-request info lines would repeat the audit line.
    const incoming = logLines.filter((l) => l.msg === 'incoming request');
    expect(incoming.length).toBeGreaterThan(0);
    expect(incoming.filter((l) => (l.req as { url?: string })?.url?.endsWith('/mcp'))).toEqual([]);
  });

  it('refuses bodies over the size cap with 413', async () => {
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(1_100_000) },
    });
    const response = await postMcp(`${stack.fx.gateway.plainUrl}/open/mcp`, huge);
    expect(response.status).toBe(413);
  });

  it('answers 404 for unknown contexts', async () => {
    const response = await postMcp(`${stack.fx.gateway.plainUrl}/nowhere/mcp`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
    });
    expect(response.status).toBe(404);
  });

  it('writes one audit line per MCP request, without the token', async () => {
    const token = await stack.km.sign({ sub: 'alice', azp: 'agent-app', scope: 'x' });
    const denied = await postMcp(
      `${stack.fx.gateway.plainUrl}/audited/mcp`,
      toolCall('delete_user'),
      {
        authorization: `Bearer ${token}`,
      },
    );
    expect(denied.status).toBe(403);
    const allowed = await postMcp(
      `${stack.fx.gateway.plainUrl}/audited/mcp`,
      toolCall('add_user_to_group'),
      {
        authorization: `Bearer ${token}`,
      },
    );
    await allowed.text();
    const audits = logLines.filter(
      (l) => (l.audit as { proxy?: string })?.proxy === 'audited-v1.0',
    );
    expect(audits.map((l) => l.audit)).toEqual([
      expect.objectContaining({
        subject: 'alice',
        clientId: 'agent-app',
        method: 'tools/call',
        tool: 'delete_user',
        decision: 'forbidden',
        reason: 'mcp-authz denied the call',
        missingScopes: ['internal_user_mgt_delete'],
      }),
      expect.objectContaining({
        tool: 'add_user_to_group',
        decision: 'allowed',
        upstreamStatus: 200,
      }),
    ]);
    expect(JSON.stringify(logLines)).not.toContain(token);
  });
});

describe('idle timeout', () => {
  it('ends a stream whose upstream falls silent for longer than limits.idle_timeout', async () => {
    const upstream = await startUpstream();
    const fx = await startTestGateway({ dataDir: tempDir(), limits: { idle_timeout: '300ms' } });
    try {
      expect(
        (await fx.deploy(proxyDefinition('stream-v1.0', '/stream', upstream.streamUrl))).status,
      ).toBe(201);
      const response = await postMcp(`${fx.gateway.plainUrl}/stream/mcp`, toolCall('search_users'));
      expect(response.status).toBe(200);
      // The upstream sends one event and then nothing: the gateway must give up, not hang.
      await expect(response.text()).rejects.toThrow();
    } finally {
      await fx.gateway.close();
      await upstream.close();
    }
  });
});
