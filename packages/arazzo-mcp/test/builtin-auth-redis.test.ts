import { LOGIN_PATH, parseCommandLine } from '@mcp-identity/arazzo-mcp';
import type { RunningServer } from '@mcp-identity/common';
import { ConfigError } from '@mcp-identity/common';
import {
  describeRequiring,
  redisMissing,
  refreshRaceChain,
  startRedis,
  type TestRedis,
  useTempDir,
} from '@mcp-identity/common/testing';
import { DEFAULT_REFRESH_RACE_WINDOW_SECONDS, loginFormFields } from '@mcp-identity/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeAcross,
  exchangeCode,
  REDIRECT_URI,
  refreshAt,
  registerClient,
} from './support/authorize.js';
import { startBuiltinServer } from './support/builtin-server.js';

const tempDir = useTempDir('arazzo-mcp-redis-');

describe('--state-url', () => {
  const serve = (...args: string[]) =>
    parseCommandLine(['serve', '--arazzo', 'w.arazzo.yaml', ...args], {});

  it('takes a Redis URL for --auth builtin, from the flag or ARAZZO_MCP_STATE_URL', () => {
    const command = serve('--auth', 'builtin', '--state-url', 'redis://cache:6379/0');
    expect(command).toMatchObject({ options: { stateUrl: 'redis://cache:6379/0' } });
    const fromEnv = parseCommandLine(['serve', '--arazzo', 'w.arazzo.yaml', '--auth', 'builtin'], {
      ARAZZO_MCP_STATE_URL: 'rediss://cache:6380',
    });
    expect(fromEnv).toMatchObject({ options: { stateUrl: 'rediss://cache:6380' } });
  });

  it('refuses another scheme, and a state store without --auth builtin', () => {
    expect(() => serve('--auth', 'builtin', '--state-url', 'memcached://cache')).toThrow(
      ConfigError,
    );
    expect(() => serve('--state-url', 'redis://cache')).toThrow(/needs --auth builtin/);
  });
});

describeRequiring('Area A instances sharing --state-url Redis', redisMissing(), () => {
  let redis: TestRedis;
  const servers: RunningServer[] = [];
  let password = '';
  /** Added to every instance's clock: how a test moves past the refresh race window. */
  let skew = 0;

  beforeAll(async () => {
    redis = await startRedis();
    // One data directory (accounts and signing key) and one Redis: three instances as one.
    const dataDir = tempDir();
    for (let i = 0; i < 3; i += 1) {
      servers.push(
        await startBuiltinServer(tempDir(), {
          dataDir,
          stateUrl: redis.url,
          clock: () => Date.now() + skew,
          onInitialAccount: (account) => {
            password = account.password;
          },
        }),
      );
    }
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await redis?.close();
  });

  const at = (i: number) => (servers[i % servers.length] as RunningServer).url;

  it('registers at one, signs in at another, and gives one 200 to 20 exchanges spread over all', async () => {
    const [first, second] = servers as [RunningServer, RunningServer, RunningServer];
    const grant = await authorizeAcross(first.url, second.url, {
      email: 'admin@localhost',
      password,
    });
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const response = await exchangeCode(at(i), grant);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
  });

  /** A code exchanged at `at(2)`: a fresh refresh-token family of the first account. */
  async function freshTokens(): Promise<{ refreshToken: string; clientId: string }> {
    const grant = await authorizeAcross(at(0), at(1), { email: 'admin@localhost', password });
    const response = await exchangeCode(at(2), grant);
    expect(response.status).toBe(200);
    const { refresh_token: refreshToken } = (await response.json()) as { refresh_token: string };
    return { refreshToken, clientId: grant.clientId };
  }

  it.each([
    ['twice to one instance', [0, 0]],
    ['to two instances', [0, 1]],
  ])(
    'gives one refresh token sent at once %s exactly one winner whose new token stays valid (20 races), until a replay revokes the family',
    async (_, pair) => {
      const tokens = await freshTokens();
      const endpoints = pair.map((i) => `${at(i)}/oauth/token`);
      // Each race is on the previous winner's token: a family revoked by a race breaks the chain.
      const { first, last } = await refreshRaceChain(endpoints, tokens);
      const refresh = (base: string, refreshToken: string) =>
        refreshAt(base, tokens.clientId, refreshToken);
      // Past the race window, the first token again is a replay: it revokes the whole family,
      // at every instance, the last winner's token included.
      skew += DEFAULT_REFRESH_RACE_WINDOW_SECONDS * 1000;
      expect((await refresh(at(2), first)).status).toBe(400);
      for (let i = 0; i < 3; i += 1) {
        const response = await refresh(at(i), last);
        expect(response.status).toBe(400);
        expect(await response.json()).toMatchObject({ error: 'invalid_grant' });
      }
    },
  );

  /** Wrong-password logins for one account, spread round-robin over the instances. */
  const wrongLogins = (count: number, email: string) =>
    Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const response = await fetch(`${at(i)}${LOGIN_PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password: `wrong-password-${i}` }),
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );

  it('evaluates concurrent wrong passwords spread over every instance at most limit times in total', async () => {
    // The default limit is 5 failures per account: with one counter per process, each of the
    // 3 instances would evaluate 5, so 15 of the 30 guesses would reach the password check.
    const statuses = await wrongLogins(30, 'throttled@example.com');
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25);
  });

  it('evaluates concurrent wrong passwords on the login form over every instance at most limit times', async () => {
    const registration = await registerClient(at(0));
    const clientId = ((await registration.json()) as { client_id: string }).client_id;
    const query = new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'xyz',
    });
    // One rendered form (and CSRF transaction) per attempt, each from the instance it posts to.
    const forms = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const page = await fetch(`${at(i)}/oauth/authorize?${query}`);
        return { base: at(i), fields: loginFormFields(await page.text()) };
      }),
    );
    const statuses = await Promise.all(
      forms.map(async ({ base, fields }, i) => {
        const response = await fetch(`${base}/oauth/authorize`, {
          method: 'POST',
          body: new URLSearchParams({
            ...fields,
            email: 'form-throttled@example.com',
            password: `wrong-password-${i}`,
          }),
          redirect: 'manual',
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    // A wrong password re-renders the form (200); beyond the shared limit of 5: 429.
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
  });

  it('refuses logins with 503 while Redis is down, never failing open, and recovers', async () => {
    await redis.stop();
    try {
      const statuses = await wrongLogins(3, 'outage@example.com');
      expect(statuses).toEqual([503, 503, 503]);
    } finally {
      await redis.start();
    }
    const deadline = Date.now() + 10_000;
    let statuses: number[] = [];
    while (Date.now() < deadline) {
      statuses = await wrongLogins(3, 'outage@example.com');
      if (!statuses.includes(503)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(statuses).toEqual([401, 401, 401]);
  });
});
