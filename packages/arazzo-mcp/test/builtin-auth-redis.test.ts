import { LOGIN_PATH, parseCommandLine } from '@mcp-identity/arazzo-mcp';
import type { RunningServer } from '@mcp-identity/common';
import { ConfigError } from '@mcp-identity/common';
import {
  describeRequiring,
  redisMissing,
  startRedis,
  type TestRedis,
  useTempDir,
} from '@mcp-identity/common/testing';
import { loginFormFields } from '@mcp-identity/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeAcross, REDIRECT_URI, registerClient } from './support/authorize.js';
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

  beforeAll(async () => {
    redis = await startRedis();
    // One data directory (accounts and signing key) and one Redis: three instances as one.
    const dataDir = tempDir();
    for (let i = 0; i < 3; i += 1) {
      servers.push(
        await startBuiltinServer(tempDir(), {
          dataDir,
          stateUrl: redis.url,
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
    const { clientId, verifier, code } = await authorizeAcross(first.url, second.url, {
      email: 'admin@localhost',
      password,
    });
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const response = await fetch(`${at(i)}/oauth/token`, {
          method: 'POST',
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            client_id: clientId,
            redirect_uri: REDIRECT_URI,
            code_verifier: verifier,
          }),
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
  });

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
