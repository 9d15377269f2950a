import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-ratelimit-');
const SEARCH = { filter: 'userName sw a', count: 1 };

describe('mcp-ratelimit', () => {
  let upstream: Upstream;
  let km: KeyManager;
  let fx: GatewayFixture;
  let url: string;
  const as = async (sub: string) => ({ authorization: `Bearer ${await km.sign({ sub })}` });

  beforeAll(async () => {
    upstream = await startUpstream();
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    const definition = proxyDefinition('limited-v1.0', '/limited', upstream.jsonMcpUrl, [
      {
        name: 'mcp-ratelimit',
        version: 'v1',
        params: {
          tools: [{ name: 'search_users', limits: [{ limit: 2, duration: '1m' }] }],
          methods: [{ name: 'tools/list', limits: [{ limit: 1, duration: '1h' }] }],
        },
      },
      { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
    ]);
    expect((await fx.deploy(definition)).status).toBe(201);
    url = `${fx.gateway.plainUrl}/limited/mcp`;
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  it('limits each tool per caller with 429, Retry-After and a JSON-RPC error, before the upstream', async () => {
    const alice = await as('alice');
    for (const id of [1, 2]) {
      expect((await postMcp(url, toolCall('search_users', SEARCH, id), alice)).status).toBe(200);
    }
    const before = upstream.hits;
    const refused = await postMcp(url, toolCall('search_users', SEARCH, 3), alice);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('2');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('ratelimit-policy')).toBe('2;w=60');
    expect(await json(refused)).toMatchObject({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32000, message: 'Rate limit exceeded' },
    });
    expect(upstream.hits).toBe(before);
    // Another tool, and another caller, have their own counters.
    expect((await postMcp(url, toolCall('delete_user', {}, 4), alice)).status).toBe(200);
    const bob = await as('bob');
    expect((await postMcp(url, toolCall('search_users', SEARCH, 5), bob)).status).toBe(200);
    // A new window opens once the old one is over.
    fx.clock.advance(61_000);
    expect((await postMcp(url, toolCall('search_users', SEARCH, 6), alice)).status).toBe(200);
  });

  it('limits methods too, and counts refusals in the metrics', async () => {
    const carol = await as('carol');
    const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
    expect((await postMcp(url, list, carol)).status).toBe(200);
    expect((await postMcp(url, list, carol)).status).toBe(429);
    const metrics = await (await fetch(`${fx.gateway.managementUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /mcp_gateway_requests_total\{proxy="limited-v1.0",method="tools\/list",decision="rate_limited"\} 1/,
    );
  });

  it('does not count calls that authentication refused', async () => {
    const anonymous = await postMcp(url, toolCall('search_users', SEARCH, 8));
    expect(anonymous.status).toBe(401);
    // Refused from its headers: the body (and so the JSON-RPC method) was never read.
    const metrics = await (await fetch(`${fx.gateway.managementUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /mcp_gateway_requests_total\{proxy="limited-v1.0",method="POST",decision="unauthenticated"\} 1/,
    );
    const dave = await as('dave');
    for (const id of [9, 10]) {
      expect((await postMcp(url, toolCall('search_users', SEARCH, id), dave)).status).toBe(200);
    }
  });

  it('rejects bad limits when the proxy is deployed', async () => {
    const response = await fx.deploy(
      proxyDefinition('bad-v1.0', '/bad', upstream.mcpUrl, [
        {
          name: 'mcp-ratelimit',
          version: 'v1',
          params: { tools: [{ name: 'x', limits: [{ limit: 0, duration: 'soon' }] }] },
        },
      ]),
    );
    expect(response.status).toBe(400);
    const fields = (await json(response)).errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        'spec.policies[0].params.tools[0].limits[0].limit',
        'spec.policies[0].params.tools[0].limits[0].duration',
      ]),
    );
  });
});
