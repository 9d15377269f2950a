import type { ChildProcess } from 'node:child_process';
import {
  describeRequiring,
  freePort,
  nginxMissing,
  postgresMissing,
  redisMissing,
  startLoadBalancer,
  startPostgres,
  startRedis,
  type TestLoadBalancer,
  type TestPostgres,
  type TestRedis,
  useTempDir,
} from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { authorizeAcross, REDIRECT_URI, registerClient } from './support/authorize.js';
import { FIXTURE_ENV, startFixtureApi, writeFixtures } from './support/fixture-api.js';
import { DIST_BIN_ARGS, type ServedBin, spawnServe } from './support/serve-bin.js';

const tempDir = useTempDir('arazzo-mcp-multi-');
const missing = [redisMissing(), postgresMissing(), nginxMissing()].filter(Boolean).join('; ');

type Tokens = { access_token: string; refresh_token: string };

/** Polls `probe` until it holds, for at most `ms`; returns its last answer. */
async function eventually<T>(probe: () => Promise<T>, done: (value: T) => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  let value = await probe();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}

describeRequiring(
  'three Area A processes behind nginx sharing Redis and PostgreSQL',
  missing || undefined,
  () => {
    let redis: TestRedis;
    let postgres: TestPostgres;
    let balancer: TestLoadBalancer;
    const instances: ServedBin[] = [];
    const children = new Set<ChildProcess>();
    let password = '';

    beforeAll(async () => {
      [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
      const databaseUrl = postgres.createDatabase('area_a');
      const api = await startFixtureApi();
      const arazzo = writeFixtures(tempDir(), api.url).users;
      const ports = await Promise.all([freePort(), freePort(), freePort()]);
      balancer = await startLoadBalancer({ backends: ports.map((port) => `127.0.0.1:${port}`) });
      for (const port of ports) {
        // One public URL for all (the load balancer's), so every instance is the same issuer.
        const served = await spawnServe(
          [
            ...['--auth', 'builtin', '--arazzo', arazzo, '--port', String(port)],
            ...['--source-server', `scim=${api.url}/scim2`],
            ...['--data-dir', tempDir(), '--public-url', balancer.url],
            ...['--state-url', redis.url, '--database-url', databaseUrl],
            // No race window: the reuse test below replays a rotated token right away.
            ...['--refresh-race-window', '0'],
          ],
          FIXTURE_ENV,
          DIST_BIN_ARGS,
        );
        children.add(served.child);
        instances.push(served);
        password ||= /Password \(shown only this once\): (\S+)/.exec(served.stdout())?.[1] ?? '';
      }
    }, 60_000);

    afterAll(async () => {
      await Promise.all(instances.map((instance) => instance.stop()));
      for (const child of children) child.kill('SIGKILL');
      await balancer?.close();
      await redis?.close();
      await postgres?.close();
    });

    const at = (i: number) => (instances[i % instances.length] as ServedBin).url;

    const authorize = (registerAt: string, loginAt: string) =>
      authorizeAcross(registerAt, loginAt, { email: 'admin@localhost', password });

    function token(base: string, params: Record<string, string>): Promise<Response> {
      return fetch(`${base}/oauth/token`, { method: 'POST', body: new URLSearchParams(params) });
    }

    function refresh(base: string, clientId: string, refreshToken: string) {
      return token(base, {
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: clientId,
      });
    }

    async function callTool(accessToken: string) {
      const client = new Client({ name: 'multi-instance', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${balancer.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
        }),
      );
      try {
        return await client.callTool({
          name: 'search_users',
          arguments: { filter: 'userName eq "alice"', count: 5 },
        });
      } finally {
        await client.close();
      }
    }

    it('registers at one, signs in at another, gives one 200 to 20 exchanges over all three, and serves tools through nginx', async () => {
      expect(password).not.toBe('');
      // The first account was created once, by the first instance only.
      expect(
        instances.filter((i) => i.stdout().includes('Created the first account')),
      ).toHaveLength(1);
      const { clientId, verifier, code } = await authorize(at(0), at(1));
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          token(at(2 + i), {
            grant_type: 'authorization_code',
            code,
            client_id: clientId,
            redirect_uri: REDIRECT_URI,
            code_verifier: verifier,
          }),
        ),
      );
      const won = responses.filter((response) => response.status === 200);
      expect(won).toHaveLength(1);
      expect(responses.filter((response) => response.status === 400)).toHaveLength(19);
      const tokens = (await won[0]?.json()) as Tokens;
      // Three calls through the round-robin balancer: every instance trusts the shared key.
      for (let i = 0; i < 3; i += 1) {
        const result = await callTool(tokens.access_token);
        expect(result.structuredContent).toMatchObject({
          users: [{ id: 'u1', userName: 'alice' }],
        });
      }
    });

    it('revokes a refresh-token family at every instance when one detects reuse', async () => {
      const { clientId, verifier, code } = await authorize(at(1), at(2));
      const exchange = await token(at(0), {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      });
      const first = (await exchange.json()) as Tokens;
      const rotated = await refresh(at(1), clientId, first.refresh_token);
      expect(rotated.status).toBe(200);
      const second = (await rotated.json()) as Tokens;
      // The already rotated token again, at a third instance: reuse, the family is revoked ...
      expect((await refresh(at(2), clientId, first.refresh_token)).status).toBe(400);
      // ... so the newest token of the family is refused at every instance.
      for (let i = 0; i < 3; i += 1) {
        const response = await refresh(at(i), clientId, second.refresh_token);
        expect(response.status).toBe(400);
        expect(await response.json()).toMatchObject({ error: 'invalid_grant' });
      }
    });

    it('answers 503 temporarily_unavailable while Redis restarts, then recovers without a restart of ours', async () => {
      await redis.stop();
      try {
        for (let i = 0; i < 3; i += 1) {
          const response = await registerClient(at(i));
          expect(response.status).toBe(503);
          expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' });
        }
      } finally {
        await redis.start();
      }
      for (let i = 0; i < 3; i += 1) {
        const status = await eventually(
          async () => (await registerClient(at(i))).status,
          (s) => s === 200,
        );
        expect(status).toBe(200);
      }
    });

    it('answers 503 while PostgreSQL restarts, then recovers without a restart of ours', async () => {
      const login = (base: string) =>
        fetch(`${base}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'admin@localhost', password }),
        });
      const { access_token: accessToken } = (await (await login(at(0))).json()) as Tokens;
      // /mcp re-checks the token's account on every request, before its scope.
      const mcp = async () => {
        const response = await fetch(`${balancer.url}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${accessToken}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
        });
        await response.arrayBuffer();
        return response.status;
      };
      await postgres.stop();
      try {
        for (let i = 0; i < 3; i += 1) {
          const response = await login(at(i));
          expect(response.status).toBe(503);
          expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' });
          expect(await mcp()).toBe(503);
        }
      } finally {
        await postgres.start();
      }
      for (let i = 0; i < 3; i += 1) {
        const status = await eventually(
          async () => (await login(at(i))).status,
          (s) => s === 200,
        );
        expect(status).toBe(200);
        // The account is found again; a normal-login token then lacks `mcp:tools` (403).
        expect(await mcp()).toBe(403);
      }
    });
  },
);
