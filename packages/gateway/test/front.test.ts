import { get } from 'node:https';
import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { proxyDefinition } from './fixtures/gateway.js';
import { CLIENT_ID } from './fixtures/key-manager.js';
import { MCP_POST_HEADERS, rawRequest } from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';

const tempDir = useTempDir('gw-front-');
const INSPECTOR = 'http://localhost:6274';
const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

/** The gateway's own error body off the MCP path: `{error, message}` and nothing else. */
const GATEWAY_ERROR = { error: expect.any(String), message: expect.any(String) };
/** The gateway's own refusal on a proxy's MCP path: a JSON-RPC error without an id. */
const JSON_RPC_ERROR = {
  jsonrpc: '2.0',
  id: null,
  error: { code: -32000, message: expect.any(String) },
};

/**
 * Issue 38: one front handler per data-plane listener serves the MCP path, metadata, health and
 * every 404, so each surface answers in one shape whatever the path, method or body.
 */
describe('the data-plane front: one 404 shape and one refusal shape per surface', () => {
  const stack = useProxyStack({
    dataDir: tempDir,
    gateway: { limits: { max_request_body_bytes: 256 } },
    proxies: ({ mcpUrl }) => [
      proxyDefinition('guarded-v1.0', '/guarded', mcpUrl, [
        { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      ]),
      proxyDefinition('open-v1.0', '/open', mcpUrl),
    ],
  });

  it('answers every 404 in the same JSON shape, on every method, with and without a body', async () => {
    const base = stack.fx.gateway.plainUrl;
    const cases: Array<[string, string, string | undefined]> = [
      ['GET', '/nowhere', undefined],
      ['POST', '/nowhere', PING],
      ['POST', '/nowhere/mcp', PING],
      ['DELETE', '/open', undefined],
      // Metadata of a proxy without mcp-auth, and of no proxy at all.
      ['GET', '/.well-known/oauth-protected-resource/open/mcp', undefined],
      ['GET', '/open/.well-known/oauth-protected-resource', undefined],
      ['GET', '/.well-known/oauth-protected-resource/nowhere/mcp', undefined],
      // A method the data plane serves on no path but a proxy's MCP path.
      ['PUT', '/nowhere', undefined],
      ['PUT', '/nowhere', PING],
      ['PATCH', '/.well-known/oauth-protected-resource/guarded/mcp', PING],
      ['POST', '/_gateway-health/healthy', PING],
    ];
    const bodies = new Set<string>();
    for (const [method, path, body] of cases) {
      const label = `${method} ${path}${body ? ' with a body' : ''}`;
      const headers: Record<string, string> = body ? { 'content-type': 'application/json' } : {};
      const response = await rawRequest(`${base}${path}`, method, headers, body);
      expect(response.status, label).toBe(404);
      expect(response.headers['content-type'], label).toBe('application/json; charset=utf-8');
      const parsed = JSON.parse(response.body);
      expect(parsed, label).toEqual({ ...GATEWAY_ERROR, error: 'not_found' });
      bodies.add(Object.keys(parsed).join());
      // A body the gateway will not read is not read: the connection closes after the answer.
      if (body) expect(response.headers.connection, label).toBe('close');
    }
    expect([...bodies]).toEqual(['error,message']);
    // Health lives on the plain listener only; the HTTPS one has no such path.
    const tls = await new Promise<number | undefined>((resolve, reject) => {
      // The listener's certificate is self-signed: only its status matters here.
      get(
        `${stack.fx.gateway.publicUrl}/_gateway-health/healthy`,
        { rejectUnauthorized: false },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      ).on('error', reject);
    });
    expect(tls).toBe(404);
  });

  it('serves metadata and health from the same front, with CORS on every path', async () => {
    const base = stack.fx.gateway.plainUrl;
    const metadata = await fetch(`${base}/.well-known/oauth-protected-resource/guarded/mcp`, {
      headers: { origin: INSPECTOR },
    });
    expect(metadata.status).toBe(200);
    expect(((await metadata.json()) as { resource: string }).resource).toBe(`${base}/guarded/mcp`);
    expect(metadata.headers.get('access-control-allow-origin')).toBe(INSPECTOR);
    const healthy = await fetch(`${base}/_gateway-health/healthy`);
    expect(healthy.status).toBe(200);
    expect(healthy.headers.get('cache-control')).toBe('no-store');
    expect(await healthy.json()).toEqual({ status: 'healthy' });
    const missing = await fetch(`${base}/nowhere`, { headers: { origin: INSPECTOR } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe(INSPECTOR);
  });

  it("answers the gateway's own refusals on a proxy's MCP path as JSON-RPC errors, and elsewhere as {error, message}", async () => {
    const base = stack.fx.gateway.plainUrl;
    const authorization = `Bearer ${await stack.km.sign({})}`;
    const mcp = `${base}/guarded/mcp`;
    const preflight = { origin: 'https://evil.example', 'access-control-request-method': 'POST' };
    const refusals: Array<[string, number, string, Record<string, string>, string | undefined]> = [
      ['origin', 403, 'POST', { ...MCP_POST_HEADERS, origin: 'https://evil.example' }, PING],
      ['method', 405, 'PUT', { authorization }, undefined],
      ['media type', 415, 'POST', { authorization, 'content-type': 'text/plain' }, PING],
      ['size', 413, 'POST', { ...MCP_POST_HEADERS, authorization }, `${PING}${' '.repeat(300)}`],
      ['preflight', 403, 'OPTIONS', preflight, undefined],
    ];
    for (const [what, status, method, headers, body] of refusals) {
      const response = await rawRequest(mcp, method, headers, body);
      expect(response.status, what).toBe(status);
      expect(JSON.parse(response.body), what).toEqual(JSON_RPC_ERROR);
    }
    const elsewhere = await rawRequest(`${base}/nowhere`, 'OPTIONS', preflight);
    expect(elsewhere.status).toBe(403);
    expect(JSON.parse(elsewhere.body)).toEqual({
      error: 'forbidden',
      message: 'Origin not allowed.',
    });
    expect(stack.upstream.hits).toBe(0);
  });
});
