import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useTempDir } from '@mcp-identity/common/testing';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basic,
  type GatewayFixture,
  proxyDefinition,
  startTestGateway,
} from './fixtures/gateway.js';
import { json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-third-party-');

const MCP_CLIENT = { id: 'mcp-client', secret: 'mcp-client-secret-0123456789abcdef' };
const GATEWAY_CLIENT = { id: 'gateway', secret: 'gateway-introspection-secret-0123456789' };
/** Outside the fixture's `secrets.env_prefixes` (GW_TEST_): no proxy's secretRef can read it. */
const SECRET_VARIABLE = 'THIRD_PARTY_IDP_TEST_INTROSPECTION_SECRET';
const OTHER_RESOURCE = 'https://other-rs.example/mcp';
const OTHER_JWT_RESOURCE = 'https://other-rs.example/jwt/mcp';

interface ThirdPartyIdp {
  issuer: string;
  /** Requests its introspection endpoint received. */
  introspections: number;
  token(resource: string): Promise<string>;
  revoke(token: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * panva's oidc-provider, a certified OpenID provider, as the third-party authorization server:
 * client credentials with RFC 8707 resource indicators; the resource server decides the access
 * token format (opaque for most, JWT for resources under `/jwt/`); RFC 7662 introspection and
 * RFC 7009 revocation. Plain HTTP on loopback, which oidc-provider serves for development.
 */
async function startThirdPartyIdp(): Promise<ThirdPartyIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const client = (id: string, secret: string) => ({
    client_id: id,
    client_secret: secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
  });
  const provider = new Provider(issuer, {
    clients: [
      client(MCP_CLIENT.id, MCP_CLIENT.secret),
      client(GATEWAY_CLIENT.id, GATEWAY_CLIENT.secret),
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] },
    ttl: { ClientCredentials: 600 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // Only the gateway learns what a token stands for; a client revokes only its own tokens.
      introspection: {
        enabled: true,
        allowedPolicy: (_ctx, caller) => caller.clientId === GATEWAY_CLIENT.id,
      },
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx, caller, token) => caller.clientId === token.clientId,
      },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: 'mcp:tools',
          accessTokenTTL: 600,
          accessTokenFormat: new URL(resource).pathname.startsWith('/jwt/') ? 'jwt' : 'opaque',
        }),
      },
    },
  });
  const idp: ThirdPartyIdp = {
    issuer,
    introspections: 0,
    async token(resource) {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: basic(MCP_CLIENT.id, MCP_CLIENT.secret),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          scope: 'mcp:tools',
          resource,
        }),
      });
      const body = (await response.json()) as { access_token?: string };
      if (response.status !== 200 || !body.access_token) {
        throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
      }
      return body.access_token;
    },
    async revoke(token) {
      const response = await fetch(`${issuer}/token/revocation`, {
        method: 'POST',
        headers: {
          authorization: basic(MCP_CLIENT.id, MCP_CLIENT.secret),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ token }),
      });
      expect(response.status).toBe(200);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/token/introspection')) idp.introspections += 1;
    callback(req, res);
  });
  return idp;
}

const auth = [{ name: 'mcp-auth', version: 'v1', params: {} }];
const call = (url: string, token: string) =>
  postMcp(url, toolCall('search_users', { filter: 'userName sw a', count: 1 }), {
    authorization: `Bearer ${token}`,
  });
const challenge = (plainUrl: string, context: string, description: string) =>
  `Bearer resource_metadata="${plainUrl}${context}/.well-known/oauth-protected-resource", ` +
  `error="invalid_token", error_description="${description}"`;

describe('mcp-auth in front of a third-party authorization server (oidc-provider)', () => {
  let idp: ThirdPartyIdp;
  let upstream: Upstream;
  let fx: GatewayFixture;
  let plainUrl: string;
  const opaqueResource = () => `${plainUrl}/opaque/mcp`;
  const jwtResource = () => `${plainUrl}/jwt/mcp`;

  beforeAll(async () => {
    idp = await startThirdPartyIdp();
    upstream = await startUpstream();
    process.env[SECRET_VARIABLE] = GATEWAY_CLIENT.secret;
    fx = await startTestGateway({
      dataDir: tempDir(),
      keyManagers: [
        {
          name: 'op',
          issuer: idp.issuer,
          jwks: { remote: { uri: `${idp.issuer}/jwks` } },
          introspection: {
            endpoint: `${idp.issuer}/token/introspection`,
            clientId: GATEWAY_CLIENT.id,
            clientSecretRef: `env:${SECRET_VARIABLE}`,
            cacheTtl: '30s',
          },
        },
      ],
    });
    plainUrl = fx.gateway.plainUrl;
    for (const context of ['/opaque', '/jwt']) {
      const name = `${context.slice(1)}-v1.0`;
      expect((await fx.deploy(proxyDefinition(name, context, upstream.mcpUrl, auth))).status).toBe(
        201,
      );
    }
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), idp?.close()]);
    delete process.env[SECRET_VARIABLE];
  });

  it('introspects an opaque token and forwards the tools/call; a repeat is answered from the cache', async () => {
    const token = await idp.token(opaqueResource());
    expect(token.split('.')).toHaveLength(1);
    const before = { introspections: idp.introspections, hits: upstream.hits };
    const response = await call(opaqueResource(), token);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('found 1 for userName sw a');
    expect(idp.introspections).toBe(before.introspections + 1);
    expect(upstream.hits).toBe(before.hits + 1);

    expect((await call(opaqueResource(), token)).status).toBe(200);
    expect(idp.introspections).toBe(before.introspections + 1);
  });

  it('refuses a revoked opaque token with 401 "not active", once the cached answer is older than cacheTtl', async () => {
    const token = await idp.token(opaqueResource());
    expect((await call(opaqueResource(), token)).status).toBe(200);
    await idp.revoke(token);
    // Within cacheTtl the answer is reused: the documented bound on how late a revocation bites.
    expect((await call(opaqueResource(), token)).status).toBe(200);
    fx.clock.advance(31_000);
    const hits = upstream.hits;
    const refused = await call(opaqueResource(), token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(
      challenge(plainUrl, '/opaque', 'the token is not active'),
    );
    expect(await json(refused)).toEqual({
      error: 'Unauthorized',
      message: 'Authentication failed',
    });
    expect(upstream.hits).toBe(hits);
  });

  it('refuses a revoked opaque token never seen before, and a made-up one, as not active', async () => {
    const revoked = await idp.token(opaqueResource());
    await idp.revoke(revoked);
    for (const token of [revoked, 'made-up-opaque-token']) {
      const response = await call(opaqueResource(), token);
      expect(response.status, token).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(
        challenge(plainUrl, '/opaque', 'the token is not active'),
      );
    }
    // The inactive answer is remembered too: a replay costs the authorization server nothing.
    const before = idp.introspections;
    expect((await call(opaqueResource(), 'made-up-opaque-token')).status).toBe(401);
    expect(idp.introspections).toBe(before);
  });

  it('refuses an active opaque token issued for another resource: 401 naming the audience', async () => {
    const foreign = await idp.token(OTHER_RESOURCE);
    const hits = upstream.hits;
    const response = await call(opaqueResource(), foreign);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      challenge(plainUrl, '/opaque', 'the token audience is not this resource'),
    );
    expect(upstream.hits).toBe(hits);
  });

  it('verifies a JWT access token with the JWKS, without introspecting it', async () => {
    const token = await idp.token(jwtResource());
    expect(token.split('.')).toHaveLength(3);
    const introspections = idp.introspections;
    const response = await call(jwtResource(), token);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('found 1 for userName sw a');
    expect(idp.introspections).toBe(introspections);
  });

  it('refuses a JWT access token issued for another resource: 401 naming the audience', async () => {
    const foreign = await idp.token(OTHER_JWT_RESOURCE);
    expect(foreign.split('.')).toHaveLength(3);
    const response = await call(jwtResource(), foreign);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      challenge(plainUrl, '/jwt', 'the token audience is not this resource'),
    );
  });
});

describe('mcp-auth introspecting tokens it has not seen, per client address', () => {
  it('counts each introspection before it is sent: over introspectionsPerMinute, 429 with Retry-After and no request', async () => {
    const idp = await startThirdPartyIdp();
    const upstream = await startUpstream();
    process.env[SECRET_VARIABLE] = GATEWAY_CLIENT.secret;
    const fx = await startTestGateway({
      dataDir: tempDir(),
      jwt: { introspectionsPerMinute: 3 },
      keyManagers: [
        {
          name: 'op',
          issuer: idp.issuer,
          introspection: {
            endpoint: `${idp.issuer}/token/introspection`,
            clientId: GATEWAY_CLIENT.id,
            clientSecretRef: `env:${SECRET_VARIABLE}`,
          },
        },
      ],
    });
    try {
      const deployed = await fx.deploy(proxyDefinition('t-v1.0', '/t', upstream.mcpUrl, auth));
      expect(deployed.status).toBe(201);
      const url = `${fx.gateway.plainUrl}/t/mcp`;
      const valid = await idp.token(url);
      // Sent at once: every one is counted before any answer comes back.
      const statuses = await Promise.all(
        ['made-up-1', 'made-up-2', valid, 'made-up-3', 'made-up-4'].map(
          async (token) => (await call(url, token)).status,
        ),
      );
      expect(statuses.filter((status) => status === 429)).toHaveLength(2);
      expect(idp.introspections).toBe(3);
      const refused = await call(url, 'made-up-5');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('60');
      expect(idp.introspections).toBe(3);
      // A window later the address may introspect again.
      fx.clock.advance(60_000);
      expect((await call(url, valid)).status).toBe(200);
    } finally {
      await fx.gateway.close();
      await Promise.all([upstream.close(), idp.close()]);
      delete process.env[SECRET_VARIABLE];
    }
  });
});

describe('mcp-auth with an introspection endpoint that does not answer', () => {
  it('answers 503 with Retry-After, not 401: the token may well be valid', async () => {
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/introspect`;
    await new Promise((resolve) => dead.close(resolve));
    const upstream = await startUpstream();
    process.env[SECRET_VARIABLE] = GATEWAY_CLIENT.secret;
    const fx = await startTestGateway({
      dataDir: tempDir(),
      jwt: { jwksFetchRetryInterval: '2s' },
      keyManagers: [
        {
          name: 'down',
          issuer: 'https://down.example',
          introspection: {
            endpoint,
            clientId: GATEWAY_CLIENT.id,
            clientSecretRef: `env:${SECRET_VARIABLE}`,
          },
        },
      ],
    });
    try {
      const url = `${fx.gateway.plainUrl}/down/mcp`;
      expect(
        (await fx.deploy(proxyDefinition('down-v1.0', '/down', upstream.mcpUrl, auth))).status,
      ).toBe(201);
      for (const attempt of [1, 2]) {
        const response = await call(url, 'some-opaque-token');
        expect(response.status, `attempt ${attempt}`).toBe(503);
        expect(response.headers.get('retry-after')).toBe('2');
        expect((await json(response)).error.message).toBe(
          'The authorization server cannot be reached to verify the token; retry later',
        );
      }
      expect(upstream.hits).toBe(0);
    } finally {
      await fx.gateway.close();
      await upstream.close();
      delete process.env[SECRET_VARIABLE];
    }
  });
});
