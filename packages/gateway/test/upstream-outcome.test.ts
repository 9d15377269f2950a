import { lineLogger, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { type HeldUpstream, startHeldUpstream } from './fixtures/held-upstream.js';
import { MCP_POST_HEADERS, postMcp, toolCall } from './fixtures/mcp-client.js';
import { type RawUpstream, startRawUpstream } from './fixtures/raw-upstream.js';

const tempDir = useTempDir('gw-outcome-');

type AuditLine = Record<string, unknown> & { proxy: string };

describe('the audit line records the upstream outcome beside the decision', () => {
  let fx: GatewayFixture;
  let raw: RawUpstream;
  let held: HeldUpstream;
  const audit: AuditLine[] = [];
  const last = (proxy: string) => audit.filter((line) => line.proxy === proxy).at(-1);

  beforeAll(async () => {
    // Every path answers as its name says: nothing, a dropped connection, half an answer.
    raw = await startRawUpstream((path, _body, res) => {
      if (path === '/silent') return;
      if (path === '/drop') return res.socket?.destroy();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"jsonrpc":"2.0","id":1,"result":{"content":[');
      setImmediate(() => res.socket?.destroy());
    });
    held = await startHeldUpstream();
    fx = await startTestGateway({
      dataDir: tempDir(),
      limits: { idle_timeout: '300ms' },
      logger: lineLogger((line) => {
        if (line.msg === 'mcp request') audit.push(line.audit as AuditLine);
      }),
    });
    for (const [name, context, url] of [
      ['dead-v1.0', '/dead', 'http://127.0.0.1:1/mcp'],
      ['drop-v1.0', '/drop', `${raw.url}/drop`],
      ['silent-v1.0', '/silent', `${raw.url}/silent`],
      ['cut-v1.0', '/cut', `${raw.url}/cut`],
      ['held-v1.0', '/held', held.mcpUrl],
    ] as const) {
      expect((await fx.deploy(proxyDefinition(name, context, url))).status).toBe(201);
    }
  });
  // A call a test left held would answer the next test's wait for one.
  afterEach(() => held.releaseAll());
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([raw?.close(), held?.close()]);
  });

  const send = (context: string) =>
    postMcp(`${fx.gateway.plainUrl}${context}/mcp`, toolCall('delete_user', {}, 7));

  it('no connection: 502, connect_error, nothing was sent', async () => {
    const response = await send('/dead');
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({
      id: 7,
      error: { code: -32000, message: 'Upstream MCP server unreachable' },
    });
    expect(last('dead-v1.0')).toMatchObject({
      decision: 'upstream_error',
      upstreamFailure: 'connect_error',
    });
  });

  it('a connection dropped after the request was sent: 502 saying it may have been applied', async () => {
    const response = await send('/drop');
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({
      id: 7,
      error: {
        code: -32000,
        message:
          'Upstream MCP server closed the connection before answering; the request may have been applied',
      },
    });
    expect(last('drop-v1.0')).toMatchObject({
      decision: 'upstream_error',
      reason: 'upstream connection lost',
      upstreamFailure: 'connection_lost',
    });
  });

  it('no answer within limits.idle_timeout: 504, timeout', async () => {
    const response = await send('/silent');
    expect(response.status).toBe(504);
    expect(last('silent-v1.0')).toMatchObject({
      decision: 'upstream_error',
      upstreamFailure: 'timeout',
    });
  });

  it('an answer cut short: its status, and that it was lost', async () => {
    // The client sees the connection end before the answer does (before its head, even: a JSON
    // answer's head leaves with its first bytes).
    await expect(send('/cut').then((response) => response.text())).rejects.toThrow();
    await expect
      .poll(() => last('cut-v1.0'))
      .toMatchObject({
        decision: 'allowed',
        upstreamStatus: 200,
        upstreamFailure: 'connection_lost',
      });
  });

  it('a client that leaves before the answer: allowed, client_closed (no upstream failure)', async () => {
    const controller = new AbortController();
    const pending = fetch(`${fx.gateway.plainUrl}/held/mcp`, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: JSON.stringify(toolCall('delete_user')),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await held.whenHolding(1);
    controller.abort();
    expect(await pending).toBe('aborted');
    await expect
      .poll(() => last('held-v1.0'))
      .toMatchObject({
        decision: 'allowed',
        upstreamFailure: 'client_closed',
      });
    const metrics = await fx.gateway.renderMetrics();
    expect(metrics).toContain(
      'mcp_gateway_upstream_failures_total{proxy="held-v1.0",failure="client_closed"} 1',
    );
  });

  it('an answer: its status, no failure', async () => {
    const pending = send('/held');
    await held.whenHolding(1);
    held.releaseAll();
    expect((await pending).status).toBe(200);
    await expect.poll(() => last('held-v1.0')).toMatchObject({ upstreamStatus: 200 });
    expect(last('held-v1.0')?.upstreamFailure).toBeUndefined();
  });
});
