import { request } from 'node:http';
import { lineLogger, useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { proxyDefinition } from './fixtures/gateway.js';
import { CLIENT_ID } from './fixtures/key-manager.js';
import { MCP_POST_HEADERS, rawRequest } from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';

const tempDir = useTempDir('gw-endpoint-');

describe('the /mcp endpoint served before Fastify', () => {
  const audit: Array<Record<string, unknown>> = [];
  const stack = useProxyStack({
    dataDir: tempDir,
    gateway: {
      limits: { max_request_body_bytes: 100 },
      logger: lineLogger((line) => {
        if (line.audit) audit.push(line.audit as Record<string, unknown>);
      }),
    },
    proxies: ({ mcpUrl }) => [
      proxyDefinition('scim-v1.0', '/scim', mcpUrl, [
        { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      ]),
    ],
  });

  it('answers a request refused from its headers once, with one audit line, whatever body follows', async () => {
    const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    const cases: Array<[string, Record<string, string>, string | undefined]> = [
      ['POST', { 'content-type': 'a/b c' }, ping],
      ['POST', { 'content-type': 'application/json' }, `${ping}${' '.repeat(150)}`],
      ['POST', {}, 'not json'],
      ['POST', { 'content-type': 'application/json' }, '{not json'],
      ['DELETE', { 'content-type': 'x' }, ping],
      ['GET', { 'mcp-protocol-version': '1999-01-01' }, undefined],
      ['HEAD', { 'mcp-protocol-version': '1999-01-01' }, undefined],
    ];
    for (const [method, headers, body] of cases) {
      const before = audit.length;
      const response = await rawRequest(
        `${stack.fx.gateway.plainUrl}/scim/mcp`,
        method,
        { authorization: 'Bearer', ...headers },
        body,
      );
      const label = `${method} ${JSON.stringify(headers)}`;
      expect(response.status, label).toBe(401);
      expect(response.headers['www-authenticate'], label).toContain('invalid_token');
      // The audit line is written before the answer; give a second one time to show up.
      await new Promise((resolve) => setImmediate(resolve));
      expect(audit.slice(before), label).toEqual([
        expect.objectContaining({ decision: 'unauthenticated', httpMethod: method }),
      ]);
    }
  });

  it('refuses bodies over the size cap with 413 after authentication, and unsupported media types with 415', async () => {
    const token = await stack.km.sign({});
    const authorization = `Bearer ${token}`;
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', pad: 'x'.repeat(200) });
    const tooLarge = await rawRequest(
      `${stack.fx.gateway.plainUrl}/scim/mcp`,
      'POST',
      { authorization, 'content-type': 'application/json' },
      big,
    );
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.connection).toBe('close');
    // The MCP path's refusals are all JSON-RPC errors (issue 38: this one was `{error, message}`).
    expect(JSON.parse(tooLarge.body)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Request body is too large' },
    });
    const unsupported = await rawRequest(
      `${stack.fx.gateway.plainUrl}/scim/mcp`,
      'POST',
      { authorization, 'content-type': 'json' },
      '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    );
    expect(unsupported.status).toBe(415);
    expect(JSON.parse(unsupported.body)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32000,
        message: 'Unsupported Media Type: Content-Type must be application/json (charset utf-8)',
      },
    });
    expect(stack.upstream.hits).toBe(0);
  });

  it('forwards a body that arrives in pieces whole, with a Content-Length and chunked', async () => {
    const authorization = `Bearer ${await stack.km.sign({})}`;
    const body = '{"jsonrpc":"2.0","id":7,"method":"ping"}';
    const pieces = [body.slice(0, 17), body.slice(17)];
    for (const framing of [{ 'content-length': String(body.length) }, {}]) {
      const hits = stack.upstream.hits;
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(
          `${stack.fx.gateway.plainUrl}/scim/mcp`,
          {
            method: 'POST',
            agent: false,
            headers: { ...MCP_POST_HEADERS, authorization, ...framing },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => {
              text += chunk.toString('utf8');
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        // The second piece leaves only once the first is on its way, in a packet of its own.
        req.write(pieces[0], () => setImmediate(() => req.end(pieces[1])));
      });
      const label = JSON.stringify(framing);
      expect(answer.status, label).toBe(200);
      expect(answer.text, label).toContain('"id":7');
      expect(stack.upstream.hits, label).toBe(hits + 1);
    }
  });
});
