import { createHmac } from 'node:crypto';
import { useTempDir } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { CLIENT_ID, ISSUER, startKeyManager } from './fixtures/key-manager.js';
import { connectClient, json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { useProxyStack } from './fixtures/proxy-stack.js';
import { startUpstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-auth-');
/**
 * A challenge names the metadata of the listener and host the client connected to, and (after
 * the spec's parameters) which check failed.
 */
const challenge401 = (plainUrl: string, description: string) =>
  `Bearer resource_metadata="${plainUrl}/scim/.well-known/oauth-protected-resource", error="invalid_token", ` +
  `error_description="${description}"`;
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 't', version: '1' },
  },
};

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('mcp-auth', () => {
  const auth = (params: Record<string, unknown>) => [{ name: 'mcp-auth', version: 'v1', params }];
  const stack = useProxyStack({
    dataDir: tempDir,
    proxies: ({ mcpUrl }) => [
      proxyDefinition(
        'scim-v1.0',
        '/scim',
        mcpUrl,
        auth({ issuers: ['idp'], audiences: [CLIENT_ID] }),
      ),
      proxyDefinition(
        'fwd-v1.0',
        '/fwd',
        mcpUrl,
        auth({
          audiences: [CLIENT_ID],
          forwardToken: true,
          requiredScopes: ['mcp:connect', 'mcp:basic'],
        }),
      ),
      proxyDefinition(
        'partial-v1.0',
        '/partial',
        mcpUrl,
        auth({ audiences: [CLIENT_ID], methods: { enabled: false } }),
      ),
    ],
  });
  let scimUrl: string;
  beforeAll(() => {
    scimUrl = `${stack.fx.gateway.plainUrl}/scim/mcp`;
  });

  it('lets the MCP SDK client initialize, list and call tools with a valid token (HTTPS)', async () => {
    const token = await stack.km.sign({ scope: 'internal_user_mgt_list' });
    const client = await connectClient(`${stack.fx.gateway.publicUrl}/scim/mcp`, token);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('search_users');
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'userName sw a', count: 3 },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'found 3 for userName sw a' }]);
    await client.close();
  });

  it('refuses initialize without a token, with the WSO2 challenge and body, before the upstream', async () => {
    const before = stack.upstream.hits;
    const response = await postMcp(scimUrl, INITIALIZE);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      challenge401(stack.fx.gateway.plainUrl, 'no access token'),
    );
    expect(await json(response)).toEqual({
      error: 'Unauthorized',
      message: 'Authentication failed',
    });
    expect(stack.upstream.hits).toBe(before);
  });

  it.each([
    [
      'a token for another audience (the backend application)',
      { aud: 'backend-app' },
      {},
      'the token audience is not this resource',
    ],
    ['an expired token', { exp: Math.floor(Date.now() / 1000) - 3600 }, {}, 'the token expired'],
    ['a token without exp', {}, { noExp: true }, 'the token claims are invalid'],
    [
      'a token from another issuer',
      { iss: 'https://evil.example/oauth2/token' },
      {},
      'the token is from an unknown issuer',
    ],
    [
      'a token not valid yet',
      { nbf: Math.floor(Date.now() / 1000) + 3600 },
      {},
      'the token is not yet valid',
    ],
    [
      'a token issued in the future',
      { iat: Math.floor(Date.now() / 1000) + 3600 },
      {},
      'the token is issued in the future',
    ],
    [
      'a token with an unknown kid',
      {},
      { kid: 'nope' },
      'the token is signed with a key its issuer does not publish',
    ],
  ])(
    'answers 401 for %s, saying which check failed',
    async (_name, claims, options, description) => {
      const token = await stack.km.sign(claims, options);
      const response = await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${token}` });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(
        challenge401(stack.fx.gateway.plainUrl, description),
      );
    },
  );

  it('names a bad signature, a refused algorithm, a malformed token and header, never echoing the token', async () => {
    const token = await stack.km.sign({});
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const tampered = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    const none = `${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`;
    for (const [authorization, description] of [
      [`Bearer ${tampered}`, 'the token signature is invalid'],
      [`Bearer ${none}`, 'the token is signed with an algorithm that is not accepted'],
      ['Bearer not-a-jwt', 'the token is malformed'],
      ['Basic YTpi', 'the Authorization header is not a Bearer token'],
    ] as const) {
      const response = await postMcp(scimUrl, INITIALIZE, { authorization });
      expect(response.status, description).toBe(401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      expect(challenge).toBe(challenge401(stack.fx.gateway.plainUrl, description));
      expect(challenge).not.toContain(authorization.slice(7, 40));
    }
  });

  it('accepts every RFC 6750 spelling of a verified token and refuses anything else around it', async () => {
    const token = await stack.km.sign({});
    const status = async (authorization: string) =>
      (await postMcp(scimUrl, INITIALIZE, { authorization })).status;
    // The first request verifies and caches the token; the others find it cached.
    expect(await status(`Bearer ${token}`)).toBe(200);
    expect(await status(`Bearer ${token}`)).toBe(200);
    expect(await status(`bearer ${token}`)).toBe(200);
    expect(await status(`BEARER   ${token}  `)).toBe(200);
    for (const spelling of [
      `Bearer ${token} x`,
      `Bearer ${token}!`,
      `Bearer ${token},`,
      `Bearer x ${token}`,
      `Bearer\t${token}`,
      `Bearer${token}`,
      `Basic ${token}`,
    ]) {
      expect(await status(spelling), spelling.slice(0, 12)).toBe(401);
    }
  });

  it('refuses other claims under the signature of a cached token, and keeps the token cached', async () => {
    const token = await stack.km.sign({ sub: 'ann' });
    const status = async (presented: string) =>
      (await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${presented}` })).status;
    expect(await status(token)).toBe(200);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url');
    expect(await status(`${header}.${forged}.${signature}`)).toBe(401);
    expect(await status(`${header}.${payload}.x${signature}`)).toBe(401);
    expect(await status(token)).toBe(200);
  });

  it('answers 401 for alg none and for HS256 signed with the public key', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: ISSUER, aud: CLIENT_ID, sub: 'u', exp: now + 600, iat: now };
    const none = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
    const jwk = stack.km.publicJwk();
    const input = `${b64url({ alg: 'HS256', kid: jwk.kid, typ: 'JWT' })}.${b64url(claims)}`;
    const hs = `${input}.${createHmac('sha256', JSON.stringify(jwk)).update(input).digest('base64url')}`;
    for (const token of [none, hs, 'not-a-jwt', `${input}.tampered`]) {
      const response = await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${token}` });
      expect(response.status).toBe(401);
    }
    const basic = await postMcp(scimUrl, INITIALIZE, { authorization: 'Basic YTpi' });
    expect(basic.status).toBe(401);
  });

  it('accepts PS256 and ES256 tokens', async () => {
    for (const alg of ['PS256', 'ES256'] as const) {
      const token = await stack.km.sign({}, { alg });
      const response = await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${token}` });
      expect(response.status).toBe(200);
    }
  });

  it('authenticates GET and DELETE on /mcp; answers OPTIONS itself, unauthenticated', async () => {
    const token = await stack.km.sign({});
    for (const method of ['GET', 'DELETE']) {
      const before = stack.upstream.hits;
      const denied = await fetch(scimUrl, { method, headers: { accept: 'text/event-stream' } });
      expect(denied.status).toBe(401);
      expect(stack.upstream.hits).toBe(before);
      const allowed = await fetch(scimUrl, {
        method,
        headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` },
      });
      expect(allowed.status).not.toBe(401);
      await allowed.body?.cancel();
      expect(stack.upstream.hits).toBe(before + 1);
    }
    const before = stack.upstream.hits;
    const options = await fetch(scimUrl, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toContain('POST');
    // Never forwarded: it would carry the upstream credential past every policy.
    expect(stack.upstream.hits).toBe(before);
  });

  it('strips Authorization by default and forwards it with forwardToken: true', async () => {
    const token = await stack.km.sign({ scope: 'mcp:connect mcp:basic' });
    await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${token}` });
    expect(stack.upstream.lastHeaders?.authorization).toBeUndefined();
    const response = await postMcp(`${stack.fx.gateway.plainUrl}/fwd/mcp`, INITIALIZE, {
      authorization: `Bearer ${token}`,
    });
    expect(response.status).toBe(200);
    expect(stack.upstream.lastHeaders?.authorization).toBe(`Bearer ${token}`);
  });

  it('enforces requiredScopes at connection and lists them in the challenge', async () => {
    const url = `${stack.fx.gateway.plainUrl}/fwd/mcp`;
    const fwdPrm = `${stack.fx.gateway.plainUrl}/fwd/.well-known/oauth-protected-resource`;
    const anonymous = await postMcp(url, INITIALIZE);
    expect(anonymous.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${fwdPrm}", scope="mcp:connect mcp:basic", error="invalid_token", ` +
        'error_description="no access token"',
    );
    const token = await stack.km.sign({ scope: 'mcp:connect' });
    const before = stack.upstream.hits;
    const response = await postMcp(url, INITIALIZE, { authorization: `Bearer ${token}` });
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${fwdPrm}", scope="mcp:basic", error="insufficient_scope", ` +
        'error_description="the token lacks the scope mcp:basic"',
    );
    expect(stack.upstream.hits).toBe(before);
  });

  it('honours methods.enabled: false (initialize open, tools/call still authenticated)', async () => {
    const url = `${stack.fx.gateway.plainUrl}/partial/mcp`;
    expect((await postMcp(url, INITIALIZE)).status).toBe(200);
    const call = toolCall('delete_user');
    expect((await postMcp(url, call)).status).toBe(401);
    const token = await stack.km.sign({});
    expect((await postMcp(url, call, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('serves protected resource metadata anonymously at both locations', async () => {
    const expected = {
      resource: `${stack.fx.gateway.plainUrl}/scim/mcp`,
      authorization_servers: [ISSUER],
    };
    const contextual = await fetch(
      `${stack.fx.gateway.plainUrl}/scim/.well-known/oauth-protected-resource`,
    );
    expect(contextual.status).toBe(200);
    expect(await json(contextual)).toEqual(expected);
    const rfc9728 = await fetch(
      `${stack.fx.gateway.plainUrl}/.well-known/oauth-protected-resource/scim/mcp`,
    );
    expect(await json(rfc9728)).toEqual(expected);
    const withScopes = await fetch(
      `${stack.fx.gateway.plainUrl}/fwd/.well-known/oauth-protected-resource`,
    );
    expect(await json(withScopes)).toEqual({
      resource: `${stack.fx.gateway.plainUrl}/fwd/mcp`,
      authorization_servers: [ISSUER],
      scopes_supported: ['mcp:connect', 'mcp:basic'],
    });
  });

  it('rejects malformed and ambiguous JSON-RPC with 400, before the upstream', async () => {
    const authorization = `Bearer ${await stack.km.sign({})}`;
    const before = stack.upstream.hits;
    const cases: Array<[string, number]> = [
      ['{"jsonrpc":"2.0",', -32700],
      ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600],
      ['{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}', -32600],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}', -32600],
      [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_users","name":"delete_user"}}',
        -32600,
      ],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","NAME":"b"}}', -32600],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}', -32600],
    ];
    for (const [body, code] of cases) {
      const response = await postMcp(scimUrl, body, { authorization });
      expect(response.status).toBe(400);
      expect((await json(response)).error.code).toBe(code);
      // Where some calls are open without a token, the body is parsed strictly before anything.
      const open = await postMcp(`${stack.fx.gateway.plainUrl}/partial/mcp`, body);
      expect(open.status).toBe(400);
      expect((await json(open)).error.code).toBe(code);
    }
    expect(stack.upstream.hits).toBe(before);
  });

  it('never serves a cached verification past the token expiry', async () => {
    const nowSeconds = Math.floor(stack.fx.clock.now() / 1000);
    const token = await stack.km.sign({ iat: nowSeconds, exp: nowSeconds + 30 });
    const headers = { authorization: `Bearer ${token}` };
    expect((await postMcp(scimUrl, INITIALIZE, headers)).status).toBe(200);
    stack.fx.clock.advance(90_000); // past exp plus the 30 s leeway; other tokens here live 10 minutes
    expect((await postMcp(scimUrl, INITIALIZE, headers)).status).toBe(401);
  });

  it('picks up a rotated signing key on an unknown kid', async () => {
    const kid = await stack.km.rotate();
    const token = await stack.km.sign({});
    const response = await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${token}` });
    expect(response.status).toBe(200);
    expect(kid).toBe('rsa-2');
  });

  it('refuses an unknown kid only after a JWKS fetched since the token arrived lacks it', async () => {
    // One fetch per unknown kid here, each in its turn; the bound under a flood of them is in
    // jwks-availability.test.ts.
    const before = stack.km.fetches;
    for (const kid of ['ghost-1', 'ghost-2', 'ghost-3']) {
      const token = await stack.km.sign({}, { kid });
      expect(
        (await postMcp(scimUrl, INITIALIZE, { authorization: `Bearer ${token}` })).status,
      ).toBe(401);
    }
    expect(stack.km.fetches).toBe(before + 3);
  });
});

describe('mcp-auth when the JWKS endpoint goes down', () => {
  it('keeps verifying with cached keys', async () => {
    const upstream = await startUpstream();
    const km = await startKeyManager();
    const fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    try {
      const definition = proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [
        { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } },
      ]);
      expect((await fx.deploy(definition)).status).toBe(201);
      const url = `${fx.gateway.plainUrl}/scim/mcp`;
      const first = await km.sign({ sub: 'first' });
      expect((await postMcp(url, INITIALIZE, { authorization: `Bearer ${first}` })).status).toBe(
        200,
      );
      const fetches = km.fetches;
      const second = await km.sign({ sub: 'second' });
      await km.stop();
      fx.clock.advance(10 * 60_000); // past the JWKS cache TTL: a refresh is attempted and fails
      expect((await postMcp(url, INITIALIZE, { authorization: `Bearer ${second}` })).status).toBe(
        200,
      );
      expect(km.fetches).toBe(fetches);
    } finally {
      await fx.gateway.close();
      await upstream.close();
    }
  });
});
