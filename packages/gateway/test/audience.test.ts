import { useTempDir } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { proxyDefinition } from './fixtures/gateway.js';
import { CLIENT_ID } from './fixtures/key-manager.js';
import { connectClient, json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';

const tempDir = useTempDir('gw-audience-');
const OTHER_RESOURCE = 'https://other-rs.example/mcp';
const auth = (params: Record<string, unknown>) => [{ name: 'mcp-auth', version: 'v1', params }];

/**
 * MCP authorization, "Token Audience Binding and Validation": a resource server MUST refuse a
 * token that was not issued for it (RFC 8707). The same issuer minting a token for another
 * resource is the attack.
 */
describe('mcp-auth audience', () => {
  const stack = useProxyStack({
    dataDir: tempDir,
    proxies: ({ mcpUrl }) => [
      proxyDefinition('own-v1.0', '/own', mcpUrl, auth({ audiences: [] })),
      proxyDefinition('default-v1.0', '/default', mcpUrl, auth({})),
      proxyDefinition('listed-v1.0', '/listed', mcpUrl, auth({ audiences: [OTHER_RESOURCE] })),
    ],
  });
  let plainResource: string;
  let httpsResource: string;
  beforeAll(() => {
    plainResource = `${stack.fx.gateway.plainUrl}/own/mcp`;
    httpsResource = `${stack.fx.gateway.publicUrl}/own/mcp`;
  });

  const call = (url: string, token: string) =>
    postMcp(url, toolCall('search_users', { filter: 'userName sw a' }), {
      authorization: `Bearer ${token}`,
    });

  it('refuses a token the same issuer minted for another resource when audiences is empty', async () => {
    const foreign = await stack.km.sign({ aud: OTHER_RESOURCE });
    for (const url of [plainResource, `${stack.fx.gateway.plainUrl}/default/mcp`]) {
      const before = stack.upstream.hits;
      const response = await call(url, foreign);
      expect(response.status, url).toBe(401);
      expect(response.headers.get('www-authenticate'), url).toContain('error="invalid_token"');
      expect(await json(response)).toEqual({
        error: 'Unauthorized',
        message: 'Authentication failed',
      });
      expect(stack.upstream.hits, url).toBe(before);
    }
  });

  it('refuses tokens that name no resource (a client id, none at all) when audiences is empty', async () => {
    for (const aud of [CLIENT_ID, undefined]) {
      const response = await call(plainResource, await stack.km.sign({ aud }));
      expect(response.status, String(aud)).toBe(401);
    }
  });

  it("accepts a token for the proxy's own resource URL, with audiences empty", async () => {
    expect((await call(plainResource, await stack.km.sign({ aud: plainResource }))).status).toBe(
      200,
    );
    const multi = await stack.km.sign({ aud: [OTHER_RESOURCE, plainResource] });
    expect((await call(plainResource, multi)).status).toBe(200);
    const client = await connectClient(httpsResource, await stack.km.sign({ aud: httpsResource }));
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'userName sw a', count: 1 },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'found 1 for userName sw a' }]);
    await client.close();
  });

  it("refuses on the http listener a token for the https listener's resource URL (RFC 9728 §3.3: one resource per URL)", async () => {
    const forHttps = await stack.km.sign({ aud: httpsResource });
    const before = stack.upstream.hits;
    expect((await call(plainResource, forHttps)).status).toBe(401);
    expect(stack.upstream.hits).toBe(before);
    const forPlain = await stack.km.sign({ aud: plainResource });
    const client = connectClient(httpsResource, forPlain);
    await expect(client).rejects.toThrow();
  });

  it('accepts another audience only where it is listed, and the own resource URL beside it', async () => {
    const foreign = await stack.km.sign({ aud: OTHER_RESOURCE });
    const listed = `${stack.fx.gateway.plainUrl}/listed/mcp`;
    expect((await call(listed, foreign)).status).toBe(200);
    expect((await call(listed, await stack.km.sign({ aud: listed }))).status).toBe(200);
    expect((await call(listed, await stack.km.sign({ aud: CLIENT_ID }))).status).toBe(401);
    expect((await call(plainResource, foreign)).status).toBe(401);
  });

  it('refuses to deploy an audience pattern, saying how to list audiences', async () => {
    const response = await stack.fx.deploy(
      proxyDefinition('star-v1.0', '/star', stack.upstream.mcpUrl, auth({ audiences: ['*'] })),
    );
    expect(response.status).toBe(400);
    const { message } = await json(response);
    expect(message).toContain('spec.policies[0].params.audiences[0]');
    expect(message).toContain('list each other audience to accept');
    const routed = await call(
      `${stack.fx.gateway.plainUrl}/star/mcp`,
      await stack.km.sign({ aud: '*' }),
    );
    expect(routed.status).toBe(404);
  });
});
