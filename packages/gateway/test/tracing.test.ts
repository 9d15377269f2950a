import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, startTracing } from '@mcp-identity/common';
import { OtlpReceiver } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpExchange } from '../src/data-plane/pipeline.js';
import type { ProxyRuntime } from '../src/data-plane/registry.js';
import { TokenExchanger } from '../src/data-plane/token-exchange.js';
import { exchangeSpan } from '../src/data-plane/tracing.js';

/*
 * The gateway's token exchange (issue 41) while tracing (issue 44): its request to the identity
 * provider is a CLIENT span, child of the MCP request's SERVER span, and carries its traceparent;
 * neither span holds the caller's token, the exchanged one or the gateway's client secret. The
 * whole stack's trace is packages/cli/test/tracing.test.ts.
 */

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CALLER_TOKEN = 'caller-token-3f9a2c';
const EXCHANGED_TOKEN = 'exchanged-token-77b1e0';
const CLIENT_SECRET = 'gateway-client-secret-d41c';

describe('the token exchange of a traced request', () => {
  let receiver: OtlpReceiver;
  let endpoint: Server;
  const received: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    expect(await startTracing('mcp-identity-gateway')).toBe(true);
    endpoint = createServer((request, response) => {
      received.push(request.headers);
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ access_token: EXCHANGED_TOKEN, token_type: 'Bearer', expires_in: 300 }),
      );
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    await new Promise((resolve) => endpoint.close(resolve));
    await receiver.close();
  });

  it('is a CLIENT span of the request’s span, whose context the token request carries', async () => {
    const { port } = endpoint.address() as AddressInfo;
    const tokenEndpoint = `http://127.0.0.1:${port}/oauth2/token`;
    const exchanger = new TokenExchanger(
      {
        tokenEndpoint,
        clientId: 'mcp-gateway',
        clientSecret: CLIENT_SECRET,
        resource: 'http://upstream.test/mcp',
        scopes: undefined,
      },
      Date.now,
      createLogger({ level: 'silent' }),
      'deleg',
    );
    const runtime = { id: 'deleg-v1.0', context: '/deleg' } as ProxyRuntime;
    const urls = { resourceUrl: 'http://gw.test/deleg/mcp', resourceMetadataUrl: '' };
    const headers = { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` };
    const exchange = new McpExchange(runtime, 'POST', headers, '127.0.0.1', urls);
    try {
      const outcome = await exchanger.exchange(CALLER_TOKEN, Date.now() + 60_000, exchange);
      expect(outcome).toMatchObject({ ok: true, token: EXCHANGED_TOKEN });
    } finally {
      await exchanger.close();
    }
    const server = exchangeSpan(exchange);
    server.end();
    const { spanId } = server.spanContext();

    // The token request named the token request's span as its parent, in the client's trace.
    const traceparent = String(received[0]?.traceparent);
    expect(traceparent).toMatch(new RegExp(`^00-${CLIENT_TRACE}-[\\da-f]{16}-01$`));
    const [, , tokenSpanId] = traceparent.split('-');

    const waitForSpans = async () => {
      for (let tries = 0; receiver.spans.length < 2 && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };
    await waitForSpans();
    const client = receiver.spans.find((span) => span.spanId === tokenSpanId);
    expect(client).toMatchObject({
      service: 'mcp-identity-gateway',
      traceId: CLIENT_TRACE,
      parentSpanId: spanId,
      kind: 3,
      name: 'POST',
      attributes: {
        'http.request.method': 'POST',
        'url.full': tokenEndpoint,
        'server.address': '127.0.0.1',
        'server.port': port,
        'http.response.status_code': 200,
      },
    });
    const gateway = receiver.spans.find((span) => span.spanId === spanId);
    expect(gateway).toMatchObject({ parentSpanId: CLIENT_SPAN, kind: 2 });
    for (const body of receiver.bodies) {
      for (const secret of [CALLER_TOKEN, EXCHANGED_TOKEN, CLIENT_SECRET]) {
        expect(body).not.toContain(secret);
      }
    }
  });
});
