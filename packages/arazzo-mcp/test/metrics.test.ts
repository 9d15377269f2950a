import { METRICS_TOKEN_ENV, startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import { expositionProblems, metricValue, useTempDir } from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeAcross, REDIRECT_URI } from './support/authorize.js';
import {
  FIXTURE_ENV,
  type FixtureApi,
  fixtureServeOptions,
  startFixtureApi,
  writeFixtures,
} from './support/fixture-api.js';

const SCRAPER_TOKEN = 'scraper-token-of-the-test';
const tempDir = useTempDir('arazzo-mcp-metrics-');
const logger = createLogger({ level: 'silent', pretty: false });
const servers: RunningServer[] = [];
let api: FixtureApi;
let users: string;

beforeAll(async () => {
  api = await startFixtureApi();
  users = writeFixtures(tempDir(), api.url).users;
});

afterAll(async () => {
  for (const server of servers) await server.close();
  await api?.close();
});

async function serve(
  env: Record<string, string>,
  builtinAuth?: { dataDir: string; onInitialAccount: (a: { password: string }) => void },
) {
  const server = await startArazzoMcpHttp({
    ...fixtureServeOptions(users, api),
    env: { ...FIXTURE_ENV, ...env },
    logger,
    ...(builtinAuth ? { builtinAuth } : {}),
  });
  servers.push(server);
  return server;
}

const scrape = (server: RunningServer, token?: string) =>
  fetch(`${server.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});

describe('arazzo-mcp metrics (SCIM MCP server)', () => {
  it('has no /metrics without a metrics token', async () => {
    const server = await serve({});
    expect((await scrape(server)).status).toBe(404);
    expect((await scrape(server, SCRAPER_TOKEN)).status).toBe(404);
  });

  it('serves /metrics only to the metrics token, with tool calls counted and timed', async () => {
    const server = await serve({ [METRICS_TOKEN_ENV]: SCRAPER_TOKEN });
    for (const token of [undefined, 'wrong-token', `${SCRAPER_TOKEN}x`]) {
      const refused = await scrape(server, token);
      expect(refused.status, String(token)).toBe(401);
      expect(await refused.text()).not.toContain('arazzo_mcp_');
    }
    const client = new Client({ name: 'metrics-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    try {
      await client.callTool({ name: 'search_users', arguments: { filter: 'x', count: 5 } });
      await client.callTool({ name: 'get_user_by_id', arguments: { userId: 'u2' } });
      const invalid = await client.callTool({ name: 'create_user', arguments: { user: '{bob}' } });
      expect(invalid.isError).toBe(true);
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow();
    } finally {
      await client.close();
    }
    const response = await scrape(server, SCRAPER_TOKEN);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(
      metricValue(text, 'arazzo_mcp_tool_calls_total{tool="search_users",outcome="success"}'),
    ).toBe(1);
    expect(
      metricValue(text, 'arazzo_mcp_tool_calls_total{tool="get_user_by_id",outcome="success"}'),
    ).toBe(1);
    expect(
      metricValue(text, 'arazzo_mcp_tool_calls_total{tool="create_user",outcome="error"}'),
    ).toBe(1);
    expect(metricValue(text, 'arazzo_mcp_tool_calls_total{tool="other",outcome="rejected"}')).toBe(
      1,
    );
    expect(metricValue(text, 'arazzo_mcp_tool_duration_seconds_count{tool="search_users"}')).toBe(
      1,
    );
    expect(
      metricValue(text, 'arazzo_mcp_http_requests_total{method="POST",route="/mcp",status="200"}'),
    ).toBeGreaterThanOrEqual(5);
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    expect(expositionProblems(text)).toEqual([]);
    // Area A's series exist only where Area A runs.
    expect(text).not.toContain('arazzo_mcp_oauth_');
  });
});

describe('arazzo-mcp metrics (Area A, --auth builtin)', () => {
  let server: RunningServer;
  let password = '';
  beforeAll(async () => {
    server = await serve(
      { [METRICS_TOKEN_ENV]: SCRAPER_TOKEN },
      { dataDir: tempDir(), onInitialAccount: (account) => (password = account.password) },
    );
  });

  it('counts registrations, sign-ins and tokens issued', async () => {
    const before = await (await scrape(server, SCRAPER_TOKEN)).text();
    const { clientId, verifier, code } = await authorizeAcross(server.url, server.url, {
      email: 'admin@localhost',
      password,
    });
    const exchange = async (values: Record<string, string>) =>
      fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(values),
      });
    const codeGrant = {
      grant_type: 'authorization_code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    };
    const issued = await exchange({ ...codeGrant, code });
    expect(issued.status).toBe(200);
    const { access_token: userToken } = (await issued.json()) as { access_token: string };
    expect((await exchange({ ...codeGrant, code })).status).toBe(400);
    const appLogin = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@localhost', password: 'not the password' }),
    });
    expect(appLogin.status).toBe(401);

    const after = await (await scrape(server, SCRAPER_TOKEN)).text();
    const moved = (series: string) => metricValue(after, series) - metricValue(before, series);
    expect(moved('arazzo_mcp_oauth_registrations_total{outcome="success"}')).toBe(1);
    expect(moved('arazzo_mcp_oauth_logins_total{flow="oauth",outcome="success"}')).toBe(1);
    expect(moved('arazzo_mcp_oauth_logins_total{flow="app",outcome="failure"}')).toBe(1);
    expect(
      moved('arazzo_mcp_oauth_tokens_total{grant_type="authorization_code",outcome="success"}'),
    ).toBe(1);
    expect(
      moved('arazzo_mcp_oauth_tokens_total{grant_type="authorization_code",outcome="refused"}'),
    ).toBe(1);
    // An end user's access token (it opens /mcp) does not open the metrics.
    expect((await scrape(server, userToken)).status).toBe(401);
  });
});
