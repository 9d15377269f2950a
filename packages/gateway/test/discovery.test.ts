import { useTempDir } from '@mcp-identity/common/testing';
import { describe, expect, it } from 'vitest';
import { proxyDefinition } from './fixtures/gateway.js';
import { CLIENT_ID, ISSUER } from './fixtures/key-manager.js';
import {
  connectClient,
  json,
  MCP_POST_HEADERS,
  postMcp,
  rawRequest,
} from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';

const tempDir = useTempDir('gw-discovery-');
const INSPECTOR = 'http://localhost:6274';
const initialize = (protocolVersion = '2025-06-18') => ({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } },
});

/** A plain HTTP request with headers fetch() will not send (Host). */
function rawPost(url: string, headers: Record<string, string>, body: unknown) {
  return rawRequest(url, 'POST', { ...MCP_POST_HEADERS, ...headers }, JSON.stringify(body));
}

describe('what standard MCP clients need from a proxy', () => {
  const auth = {
    name: 'mcp-auth',
    version: 'v1',
    params: { audiences: [CLIENT_ID], requiredScopes: ['mcp:connect'] },
  };
  const authz = {
    name: 'mcp-authz',
    version: 'v1',
    params: {
      tools: [
        { name: 'search_users', scopes: { allOf: ['internal_user_mgt_list'] } },
        { name: 'delete_user', scopes: { anyOf: ['internal_user_mgt_delete', 'admin'] } },
      ],
    },
  };
  const stack = useProxyStack({
    dataDir: tempDir,
    gateway: { listeners: { allowed_origins: ['https://inspector.example.com'] } },
    proxies: ({ mcpUrl }) => {
      const oldClientsOnly = proxyDefinition('old-v1.0', '/old', mcpUrl);
      (oldClientsOnly.spec as Record<string, unknown>).specVersions = ['2025-06-18'];
      return [
        proxyDefinition('scim-v1.0', '/scim', mcpUrl, [auth, authz]),
        proxyDefinition('open-v1.0', '/open', mcpUrl),
        oldClientsOnly,
      ];
    },
  });

  it('refuses the conformance suite’s DNS rebinding request with 403, with or without auth', async () => {
    const evil = { host: 'evil.example.com', origin: 'http://evil.example.com' };
    for (const context of ['/open', '/scim']) {
      const before = stack.upstream.hits;
      const response = await rawPost(
        `${stack.fx.gateway.plainUrl}${context}/mcp`,
        evil,
        initialize(),
      );
      expect(response.status).toBe(403);
      expect(JSON.parse(response.body)).toMatchObject({ error: { code: -32000 } });
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
      expect(stack.upstream.hits).toBe(before);
    }
    // Without an Origin (a non-browser client), the same Host is served.
    const plain = await rawPost(
      `${stack.fx.gateway.plainUrl}/open/mcp`,
      { host: 'evil.example.com' },
      initialize(),
    );
    expect(plain.status).toBe(200);
  });

  it('serves allowed browser origins with CORS on /mcp, its 401 and the metadata', async () => {
    for (const origin of [INSPECTOR, 'https://inspector.example.com']) {
      const open = await postMcp(`${stack.fx.gateway.plainUrl}/open/mcp`, initialize(), { origin });
      expect(open.status).toBe(200);
      expect(open.headers.get('access-control-allow-origin')).toBe(origin);
      const challenge = await postMcp(`${stack.fx.gateway.plainUrl}/scim/mcp`, initialize(), {
        origin,
      });
      expect(challenge.status).toBe(401);
      expect(challenge.headers.get('access-control-allow-origin')).toBe(origin);
      expect(challenge.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
      const prm = await fetch(
        `${stack.fx.gateway.plainUrl}/.well-known/oauth-protected-resource/scim/mcp`,
        {
          headers: { origin },
        },
      );
      expect(prm.headers.get('access-control-allow-origin')).toBe(origin);
      expect(prm.headers.get('vary')).toContain('Origin');
    }
  });

  it('answers CORS preflights itself: 204 for allowed origins, 403 otherwise', async () => {
    const preflight = (origin: string) =>
      fetch(`${stack.fx.gateway.plainUrl}/scim/mcp`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
        },
      });
    const allowed = await preflight(INSPECTOR);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-headers')).toContain('Mcp-Protocol-Version');
    expect(allowed.headers.get('access-control-allow-methods')).toContain('POST');
    expect((await preflight('https://evil.example')).status).toBe(403);
  });

  it('accepts a token whose audience is the resource URL of the listener it was sent to (RFC 8707)', async () => {
    const scope = 'mcp:connect internal_user_mgt_list';
    const plainResource = `${stack.fx.gateway.plainUrl}/scim/mcp`;
    const forPlain = await stack.km.sign({ aud: plainResource, scope });
    const ok = await postMcp(plainResource, initialize(), { authorization: `Bearer ${forPlain}` });
    expect(ok.status).toBe(200);
    // The standard client path: discovery-less, with only the gateway URL and such a token.
    const httpsResource = `${stack.fx.gateway.publicUrl}/scim/mcp`;
    const forHttps = await stack.km.sign({ aud: [httpsResource], scope });
    const client = await connectClient(httpsResource, forHttps);
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'userName sw a', count: 1 },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'found 1 for userName sw a' }]);
    await client.close();
    // A resource URL of another listener, or of another proxy, is not this proxy's audience.
    for (const aud of [
      httpsResource,
      `${stack.fx.gateway.plainUrl}/open/mcp`,
      'https://evil.example/scim/mcp',
    ]) {
      const token = await stack.km.sign({ aud, scope });
      const refused = await postMcp(plainResource, initialize(), {
        authorization: `Bearer ${token}`,
      });
      expect(refused.status, aud).toBe(401);
    }
  });

  it('advertises required and rule scopes in the metadata and in the 401 challenge', async () => {
    const prm = await json(
      await fetch(`${stack.fx.gateway.plainUrl}/.well-known/oauth-protected-resource/scim/mcp`),
    );
    const scopes = ['mcp:connect', 'internal_user_mgt_list', 'internal_user_mgt_delete', 'admin'];
    expect(prm).toEqual({
      resource: `${stack.fx.gateway.plainUrl}/scim/mcp`,
      authorization_servers: [ISSUER],
      scopes_supported: scopes,
    });
    const challenge = await postMcp(`${stack.fx.gateway.plainUrl}/scim/mcp`, initialize());
    expect(challenge.headers.get('www-authenticate')).toContain(`scope="${scopes.join(' ')}"`);
  });

  it('answers 400 for a protocol version header outside the proxy’s specVersions', async () => {
    const url = `${stack.fx.gateway.plainUrl}/old/mcp`;
    expect((await postMcp(url, initialize('2025-06-18'))).status).toBe(200);
    const header = await postMcp(
      url,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { 'mcp-protocol-version': '2024-11-05' },
    );
    expect(header.status).toBe(400);
    const fine = await postMcp(
      url,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { 'mcp-protocol-version': '2025-06-18' },
    );
    expect(fine.status).toBe(200);
  });
});
