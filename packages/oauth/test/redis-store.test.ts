import {
  describeRequiring,
  redisMissing,
  refreshRaceChain,
  startRedis,
  type TestRedis,
} from '@mcp-identity/common/testing';
import {
  CODE_TTL_MS,
  DEFAULT_REFRESH_RACE_WINDOW_SECONDS,
  RedisOAuthStore,
} from '@mcp-identity/oauth';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  authorizeCode,
  authorizeParams,
  exchangeCode,
  getAuthorize,
  obtainTokens,
  pkcePair,
  postLogin,
  refresh,
  registerClient,
  type TokenResponse,
} from './fixtures/flow.js';
import { startHost, type TestHost } from './fixtures/host.js';

const RACE_WINDOW_MS = DEFAULT_REFRESH_RACE_WINDOW_SECONDS * 1000;

async function oauthErrorOf(response: Response): Promise<string> {
  return ((await response.json()) as { error: string }).error;
}

describeRequiring('Area A state in Redis, shared by three instances', redisMissing(), () => {
  let redis: TestRedis;
  const stores: RedisOAuthStore[] = [];
  const hosts: TestHost[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    for (let i = 0; i < 3; i += 1) {
      const store = new RedisOAuthStore(redis.url);
      await store.ready();
      stores.push(store);
      hosts.push(await startHost({ store }));
    }
  });
  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.close()));
    await Promise.all(stores.map((s) => s.close()));
    await redis?.close();
  });

  /**
   * Runs `steps` with every instance's clock past the refresh race window, then puts the clocks
   * back: Redis expires entries by its own clock, which the later tests compare with.
   */
  async function pastRaceWindow(steps: () => Promise<void>): Promise<void> {
    for (const host of hosts) host.clock.advance(RACE_WINDOW_MS);
    try {
      await steps();
    } finally {
      for (const host of hosts) host.clock.advance(-RACE_WINDOW_MS);
    }
  }

  it('gives exactly one 200 to 20 concurrent exchanges of one code spread over the instances', async () => {
    const { code, clientId, verifier } = await authorizeCode(hosts[0] as TestHost);
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const response = await exchangeCode((hosts[i % 3] as TestHost).base, {
          code,
          clientId,
          verifier,
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
  });

  it('registers at one instance, signs in at another and exchanges the code at a third', async () => {
    const [first, second, third] = hosts as [TestHost, TestHost, TestHost];
    const clientId = await registerClient(first.base);
    const { verifier, challenge } = pkcePair();
    const form = await getAuthorize(second.base, authorizeParams(clientId, challenge));
    const login = await postLogin(second.base, form.fields);
    expect(login.status).toBe(303);
    const code = new URL(login.headers.get('location') as string).searchParams.get('code');
    const exchanged = await exchangeCode(third.base, { code: code as string, clientId, verifier });
    expect(exchanged.status).toBe(200);
  });

  it('revokes the family at every instance when a refresh token is reused at one', async () => {
    const [first, second, third] = hosts as [TestHost, TestHost, TestHost];
    const tokens = await obtainTokens(first);
    const rotated = await refresh(second.base, tokens.refresh_token, tokens.clientId);
    expect(rotated.status).toBe(200);
    const next = (await rotated.json()) as TokenResponse;
    // Past the race window, the rotated token again is a replay.
    await pastRaceWindow(async () => {
      const reuse = await refresh(third.base, tokens.refresh_token, tokens.clientId);
      expect(reuse.status).toBe(400);
      expect(await oauthErrorOf(reuse)).toBe('invalid_grant');
      const afterRevocation = await refresh(first.base, next.refresh_token, tokens.clientId);
      expect(afterRevocation.status).toBe(400);
      expect(await oauthErrorOf(afterRevocation)).toBe('invalid_grant');
    });
  });

  it('gives concurrent refreshes of one token exactly one winner, on one instance and across two (20 races each)', async () => {
    const [first, second] = hosts as [TestHost, TestHost];
    for (const bases of [
      [first.base, first.base],
      [first.base, second.base],
    ]) {
      const tokens = await obtainTokens(first);
      const chain = await refreshRaceChain(
        bases.map((base) => `${base}/oauth/token`),
        { refreshToken: tokens.refresh_token, clientId: tokens.clientId },
      );
      // Once a replay is detected, nothing of the family survives: not the last winner's token.
      await pastRaceWindow(async () => {
        const replay = await refresh(second.base, chain.first, tokens.clientId);
        expect(await oauthErrorOf(replay)).toBe('invalid_grant');
        const last = await refresh(first.base, chain.last, tokens.clientId);
        expect(await oauthErrorOf(last)).toBe('invalid_grant');
      });
    }
  });

  it('keeps a code only for its lifetime, and never its value', async () => {
    const { code } = await authorizeCode(hosts[1] as TestHost);
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys('mcp-identity:oauth:code:*');
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.some((k) => k.includes(code))).toBe(false);
      for (const key of keys) {
        const ttl = await client.pttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(CODE_TTL_MS);
      }
    } finally {
      client.disconnect();
    }
  });

  it('answers 503 while Redis is down and recovers without a restart', async () => {
    const [, second] = hosts as [TestHost, TestHost];
    const { code, clientId, verifier } = await authorizeCode(second);
    await redis.stop();
    const down = await exchangeCode(second.base, { code, clientId, verifier });
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('2');
    expect(await oauthErrorOf(down)).toBe('temporarily_unavailable');

    await redis.start();
    const deadline = Date.now() + 10_000;
    let tokens: TokenResponse | undefined;
    while (!tokens) {
      tokens = await obtainTokens(second).catch(async (error: Error) => {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
        return undefined;
      });
    }
    expect(tokens.access_token).toBeTruthy();
  });
});
