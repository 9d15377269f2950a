import { spawnSync } from 'node:child_process';
import { createLogger } from '@mcp-identity/common';
import {
  describeRequiring,
  type FixedUpstream,
  nginxMissing,
  postgresMissing,
  startFixedUpstream,
  startLoadBalancer,
  startPostgres,
  type TestLoadBalancer,
  type TestPostgres,
  useTempDir,
} from '@mcp-identity/common/testing';
import { startGateway } from '@mcp-identity/gateway';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { basic, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import {
  GATEWAY_BIN,
  type GatewayProcess,
  startGatewayProcess,
  waitFor,
  writeGatewayConfig,
} from './fixtures/gateway-process.js';

const BASE = '/api/management/v1/mcp-proxies';
const tempDir = useTempDir('gw-pg-');

const deploy = (gateway: GatewayProcess, definition: Record<string, unknown>) =>
  gateway.management(BASE, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(definition),
  });

/** A tools/call through `baseUrl` to the proxy at `context`; the HTTP status. */
async function callTool(baseUrl: string, context: string): Promise<number> {
  const response = await fetch(`${baseUrl}${context}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search_users', arguments: {} },
    }),
  });
  await response.arrayBuffer();
  return response.status;
}

const answers = (baseUrl: string, context: string) => async () =>
  (await callTool(baseUrl, context)) === 200;
const refuses = (baseUrl: string, context: string) => async () =>
  (await callTool(baseUrl, context)) === 404;

/** Backends currently LISTENing for proxy changes: one per running instance once connected. */
async function listeners(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::integer AS n FROM pg_stat_activity WHERE query = 'LISTEN mcp_gateway_proxies'",
    );
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

describeRequiring(
  'three gateway processes on one PostgreSQL, behind nginx',
  postgresMissing() ?? nginxMissing(),
  () => {
    let postgres: TestPostgres;
    let databaseUrl: string;
    let upstream: FixedUpstream;
    let balancer: TestLoadBalancer;
    const gateways: GatewayProcess[] = [];

    beforeAll(async () => {
      postgres = await startPostgres();
      databaseUrl = postgres.createDatabase('gateway_cluster');
      upstream = await startFixedUpstream();
      // Notifications alone must carry changes within a second: the periodic reconcile is
      // pushed far out of the way.
      // The third instance runs two workers: a change reaches them through their primary.
      for (const workers of ['1', '1', '2']) {
        const config = await writeGatewayConfig(tempDir(), {
          database: { reconcile_interval: '10m' },
        });
        gateways.push(
          await startGatewayProcess(config, ['--workers', workers], {
            GATEWAY_DATABASE_URL: databaseUrl,
          }),
        );
      }
      balancer = await startLoadBalancer({
        backends: gateways.map((g) => new URL(g.plainUrl).host),
      });
    }, 60_000);

    afterAll(async () => {
      await balancer?.close();
      await Promise.all(gateways.map((g) => g.stop()));
      await upstream?.close();
      await postgres?.close();
    });

    it('migrates the schema once and records its version', async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT version FROM mcp_gateway_schema_version');
        expect(rows).toEqual([{ version: 1 }]);
      } finally {
        await client.end();
      }
    });

    it('serves a proxy created at instance 1 from instances 2 and 3 within 1 s, and after instance 1 is killed', async () => {
      const [first, second, third] = gateways as [GatewayProcess, GatewayProcess, GatewayProcess];
      expect(await callTool(second.plainUrl, '/shared')).toBe(404);
      const created = await deploy(first, proxyDefinition('shared', '/shared', upstream.mcpUrl));
      expect(created.status).toBe(201);
      const [atSecond, atThird] = await Promise.all([
        waitFor(answers(second.plainUrl, '/shared'), 1_000, 'instance 2 serves the proxy'),
        waitFor(answers(third.plainUrl, '/shared'), 1_000, 'instance 3 serves the proxy'),
      ]);
      expect(atSecond).toBeLessThan(1_000);
      expect(atThird).toBeLessThan(1_000);

      await first.kill();
      const statuses = [];
      for (let i = 0; i < 9; i += 1) statuses.push(await callTool(balancer.url, '/shared'));
      expect(statuses).toEqual(Array(9).fill(200));
      const stored = await second.management(`${BASE}/shared`);
      expect(stored.status).toBe(200);
      expect(((await stored.json()) as { spec: { context: string } }).spec.context).toBe('/shared');
    });

    it('carries updates and deletions made at one instance to the others within 1 s', async () => {
      const [, second, third] = gateways as [GatewayProcess, GatewayProcess, GatewayProcess];
      const moved = proxyDefinition('shared', '/moved', upstream.mcpUrl);
      const put = await second.management(`${BASE}/shared`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(moved),
      });
      expect(put.status).toBe(200);
      await waitFor(answers(third.plainUrl, '/moved'), 1_000, 'instance 3 serves the new context');
      expect(await callTool(third.plainUrl, '/shared')).toBe(404);

      expect((await third.management(`${BASE}/shared`, { method: 'DELETE' })).status).toBe(200);
      await waitFor(refuses(second.plainUrl, '/moved'), 1_000, 'instance 2 drops the proxy');
    });

    it('refuses a proxy another instance already stored, whichever instance is asked', async () => {
      const [, second, third] = gateways as [GatewayProcess, GatewayProcess, GatewayProcess];
      expect((await deploy(second, proxyDefinition('once', '/once', upstream.mcpUrl))).status).toBe(
        201,
      );
      const again = await deploy(third, proxyDefinition('other', '/once', upstream.mcpUrl));
      expect(again.status).toBe(409);
    });

    it('generates one admin for instances that start together, usable at each', async () => {
      const url = postgres.createDatabase('gateway_admin');
      const announced: string[][] = [];
      const start = () =>
        startGateway({
          settings: {
            data_dir: tempDir(),
            listeners: { host: '127.0.0.1', https_port: 0, http_port: 0, management_port: 0 },
            database: { url },
          },
          logger: createLogger({ level: 'silent', pretty: false }),
          onGeneratedAdmin: (user, password) => announced.push([user, password]),
        });
      const instances = await Promise.all([start(), start()]);
      try {
        expect(announced).toHaveLength(1);
        const [user, password] = announced[0] as [string, string];
        for (const instance of instances) {
          const response = await fetch(`${instance.managementUrl}${BASE}`, {
            headers: { authorization: basic(user, password) },
          });
          expect(response.status).toBe(200);
        }
      } finally {
        await Promise.all(instances.map((i) => i.close()));
      }
    });

    it('gateway migrate copies a SQLite data directory into PostgreSQL, once', async () => {
      const dataDir = tempDir();
      const url = postgres.createDatabase('gateway_migrated');
      const announced: string[][] = [];
      const start = (database?: { url: string }) =>
        startGateway({
          settings: {
            data_dir: dataDir,
            listeners: { host: '127.0.0.1', https_port: 0, http_port: 0, management_port: 0 },
            ...(database ? { database } : {}),
          },
          logger: createLogger({ level: 'silent', pretty: false }),
          onGeneratedAdmin: (user, password) => announced.push([user, password]),
        });
      const sqlite = await start();
      const [user, password] = announced[0] as [string, string];
      const created = await fetch(`${sqlite.managementUrl}${BASE}`, {
        method: 'POST',
        headers: { authorization: basic(user, password), 'content-type': 'application/json' },
        body: JSON.stringify(proxyDefinition('legacy', '/legacy', upstream.mcpUrl)),
      });
      expect(created.status).toBe(201);
      const before = (await created.json()) as { status: { createdAt: string } };
      await sqlite.close();

      const migrate = () =>
        spawnSync(
          process.execPath,
          [GATEWAY_BIN, 'migrate', '--data-dir', dataDir, '--database-url', url],
          { encoding: 'utf8', timeout: 20_000 },
        );
      const first = migrate();
      expect(first.status).toBe(0);
      expect(first.stdout).toContain('copied 1 MCP proxy (legacy)');
      expect(first.stdout).toContain('generated admin: copied');
      const second = migrate();
      expect(second.status).toBe(0);
      expect(second.stdout).toContain('copied 0 MCP proxies; skipped 1');

      const onPostgres = await start({ url });
      try {
        expect(announced).toHaveLength(1);
        const listed = await fetch(`${onPostgres.managementUrl}${BASE}/legacy`, {
          headers: { authorization: basic(user, password) },
        });
        expect(listed.status).toBe(200);
        const after = (await listed.json()) as { status: { createdAt: string } };
        expect(after.status.createdAt).toBe(before.status.createdAt);
        expect(await callTool(onPostgres.plainUrl, '/legacy')).toBe(200);
      } finally {
        await onPostgres.close();
      }
    });

    it('heals a missed notification with the periodic reconcile', async () => {
      const url = postgres.createDatabase('gateway_reconcile');
      const start = async (reconcileInterval: string) =>
        startTestGateway({
          dataDir: tempDir(),
          database: { url, reconcile_interval: reconcileInterval },
        });
      const writer = await start('10m');
      const follower = await start('300ms');
      const sql = new pg.Client({ connectionString: url });
      await sql.connect();
      try {
        await sql.query('ALTER TABLE mcp_proxies DISABLE TRIGGER mcp_proxies_changed');
        expect(
          (await writer.deploy(proxyDefinition('quiet', '/quiet', upstream.mcpUrl))).status,
        ).toBe(201);
        await waitFor(
          answers(follower.gateway.plainUrl, '/quiet'),
          2_000,
          'the follower finds the proxy without a notification',
        );
      } finally {
        await sql.end();
        await writer.gateway.close();
        await follower.gateway.close();
      }
    });

    it('answers 503 from the management API while PostgreSQL is down, keeps routing, and recovers without a restart', async () => {
      const [, second, third] = gateways as [GatewayProcess, GatewayProcess, GatewayProcess];
      await waitFor(answers(third.plainUrl, '/once'), 1_000, 'instance 3 serves /once');
      await postgres.stop();

      const list = await second.management(BASE);
      expect(list.status).toBe(503);
      expect(list.headers.get('retry-after')).toBe('5');
      expect(await list.json()).toEqual({
        status: 'error',
        message: 'the configuration database is unavailable',
      });
      const create = await deploy(third, proxyDefinition('late', '/late', upstream.mcpUrl));
      expect(create.status).toBe(503);
      for (let i = 0; i < 4; i += 1) expect(await callTool(balancer.url, '/once')).toBe(200);

      await postgres.start();
      await waitFor(
        async () => (await second.management(BASE)).status === 200,
        10_000,
        'the management API recovers',
      );
      await waitFor(
        async () => (await listeners(databaseUrl)) === 2,
        10_000,
        'both instances listen for changes again',
      );
      expect((await deploy(second, proxyDefinition('late', '/late', upstream.mcpUrl))).status).toBe(
        201,
      );
      await waitFor(answers(third.plainUrl, '/late'), 1_000, 'instance 3 serves /late');
    });
  },
);
