import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GatewayFixture,
  proxyDefinition,
  startTestGateway,
  type TestClock,
  testClock,
} from './fixtures/gateway.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { json, postMcp, toolCall } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-jwks-');
const CALL = toolCall('search_users', { filter: 'userName sw a', count: 1 });
/** The minimum time between two JWKS fetches the flood test configures. */
const MIN_INTERVAL_MS = 300;
/**
 * The wait after a failed fetch: the default `jwksfetchretryinterval`, which never grows here
 * (the fixture sets `jwksFetchRetryCount = 0`).
 */
const RETRY_INTERVAL_MS = 500;

/** A TCP endpoint that counts connections and either resets them or never answers them. */
async function rawJwks(mode: 'reset' | 'hang') {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    if (mode === 'reset') return socket.resetAndDestroy();
    sockets.add(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    jwksUri: `https://127.0.0.1:${port}/oauth2/jwks`,
    get connections() {
      return connections;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('mcp-auth while the key manager is unreachable (issue 37)', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function gatewayFor(
    keyManager: KeyManager,
    options: { jwt?: Record<string, unknown>; clock?: TestClock } = {},
  ): Promise<{ fx: GatewayFixture; upstream: Upstream; url: string }> {
    const upstream = await startUpstream();
    cleanups.push(() => upstream.close());
    const fx = await startTestGateway({
      dataDir: tempDir(),
      keyManager,
      ...(options.jwt ? { jwt: options.jwt } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    cleanups.push(() => fx.gateway.close());
    const auth = { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } };
    expect(
      (await fx.deploy(proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [auth]))).status,
    ).toBe(201);
    return { fx, upstream, url: `${fx.gateway.plainUrl}/scim/mcp` };
  }

  async function keyManager(): Promise<KeyManager> {
    const km = await startKeyManager();
    cleanups.push(() => km.stop().catch(() => undefined));
    return km;
  }

  const post = (url: string, token: string) =>
    postMcp(url, CALL, { authorization: `Bearer ${token}` });
  const ready = async (fx: GatewayFixture) => {
    const response = await fetch(`${fx.gateway.plainUrl}/_gateway-health/ready`);
    return { status: response.status, body: await json(response) };
  };

  /** A 503 that says when to retry, in the JSON-RPC shape of the MCP endpoint; its seconds. */
  async function expectUnavailable(response: Response): Promise<number> {
    expect(response.status).toBe(503);
    expect(response.headers.get('www-authenticate')).toBeNull();
    const retryAfter = response.headers.get('retry-after') ?? '';
    expect(retryAfter).toMatch(/^[1-9][0-9]*$/);
    const body = await json(response);
    expect(body.jsonrpc).toBe('2.0');
    expect(body.error.code).toBe(-32000);
    expect(body.error.data).toEqual({ retryAfterSeconds: Number(retryAfter) });
    return Number(retryAfter);
  }

  it('is not ready and answers valid tokens 503 until the JWKS was fetched; the IdP back, the next request passes', async () => {
    const km = await keyManager();
    await km.stop();
    // Retries far apart, so none of the gateway's own is under way when the test's request
    // comes: what that request meets is then decided, not raced.
    const { fx, upstream, url } = await gatewayFor(km, { jwt: { jwksFetchRetryInterval: '20s' } });
    expect(await ready(fx)).toEqual({ status: 503, body: { status: 'not_ready' } });
    const token = await km.sign({});
    const before = upstream.hits;
    const retryAfter = await expectUnavailable(await post(url, token));
    expect(upstream.hits).toBe(before);

    await km.restart();
    fx.clock.advance(retryAfter * 1000); // what the client was told to wait, no more
    expect((await post(url, token)).status).toBe(200);
    expect(await ready(fx)).toEqual({ status: 200, body: { status: 'ready' } });
  });

  it('answers an unknown kid 503 while the JWKS is unreachable, and decides it once it answers', async () => {
    const km = await keyManager();
    const { fx, url } = await gatewayFor(km);
    expect((await post(url, await km.sign({}))).status).toBe(200);
    await km.stop();
    await km.rotate();
    const rotated = await km.sign({});
    const retryAfter = await expectUnavailable(await post(url, rotated));
    // Ready stays true: the keys fetched before keep verifying the tokens they signed.
    expect((await ready(fx)).status).toBe(200);

    await km.restart();
    fx.clock.advance(retryAfter * 1000);
    expect((await post(url, rotated)).status).toBe(200);
    expect((await post(url, await km.sign({}, { kid: 'ghost' }))).status).toBe(401);
  });

  it('gives up on a JWKS endpoint that never answers after jwksfetchtimeout: 503, not ready', async () => {
    const km = await keyManager();
    const hung = await rawJwks('hang');
    cleanups.push(() => hung.close());
    const { fx, url } = await gatewayFor(
      { ...km, jwksUri: hung.jwksUri },
      { jwt: { jwksFetchTimeout: '200ms' } },
    );
    await expectUnavailable(await post(url, await km.sign({})));
    expect((await ready(fx)).status).toBe(503);
  });

  it('accepts a key the IdP has just published on first sight, twice within 10 s (default settings)', async () => {
    const km = await keyManager();
    const { url } = await gatewayFor(km);
    expect((await post(url, await km.sign({}))).status).toBe(200);
    const fetched = km.fetches;
    for (const rotation of [1, 2]) {
      const kid = await km.rotate();
      const response = await post(url, await km.sign({}));
      expect(response.status, kid).toBe(200);
      expect(km.fetches).toBe(fetched + rotation);
    }
  });

  it('fetches the JWKS at most once per minimum interval for a flood of unknown kids', async () => {
    const km = await keyManager();
    const { fx, url } = await gatewayFor(km, {
      jwt: { jwksRefreshCooldown: `${MIN_INTERVAL_MS}ms` },
    });
    expect((await post(url, await km.sign({}))).status).toBe(200);
    const before = km.fetches;
    const startedAt = fx.clock.now();
    const forged = await Promise.all(
      Array.from({ length: 100 }, async () => km.sign({}, { kid: randomUUID() })),
    );
    const statuses = await Promise.all(forged.map(async (t) => (await post(url, t)).status));
    expect(new Set(statuses)).toEqual(new Set([401]));
    for (const token of forged.slice(0, 5)) expect((await post(url, token)).status).toBe(401);
    const elapsed = fx.clock.now() - startedAt;
    const fetches = km.fetches - before;
    expect(fetches).toBeGreaterThan(0);
    expect(fetches).toBeLessThanOrEqual(Math.floor(elapsed / MIN_INTERVAL_MS) + 1);
  });

  it('backs off a failing JWKS endpoint: a flood of requests while it is down costs a few attempts', async () => {
    const km = await keyManager();
    const reset = await rawJwks('reset');
    cleanups.push(() => reset.close());
    const clock = testClock();
    const startedAt = clock.now();
    const { url } = await gatewayFor({ ...km, jwksUri: reset.jwksUri }, { clock });
    const token = await km.sign({});
    const concurrent = await Promise.all(
      Array.from({ length: 50 }, async () => (await post(url, token)).status),
    );
    expect(new Set(concurrent)).toEqual(new Set([503]));
    for (let i = 0; i < 20; i++) expect((await post(url, token)).status).toBe(503);
    const elapsed = clock.now() - startedAt;
    expect(reset.connections).toBeGreaterThan(0);
    expect(reset.connections).toBeLessThanOrEqual(Math.floor(elapsed / RETRY_INTERVAL_MS) + 1);
  });
});
