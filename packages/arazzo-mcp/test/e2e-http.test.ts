import { startArazzoMcpHttp, ToolShapeError } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FIXTURE_ENV,
  type FixtureApi,
  startFixtureApi,
  writeFixtures,
} from './support/fixture-api.js';

const logger = createLogger({ level: 'silent', pretty: false });
const tempDir = useTempDir('arazzo-mcp-e2e-');
let api: FixtureApi;
let files: ReturnType<typeof writeFixtures>;
const servers: RunningServer[] = [];
const clients: Client[] = [];

async function serve(sourceServer: string, extra: { tokenCache?: boolean } = {}) {
  const server = await startArazzoMcpHttp({
    arazzo: files.users,
    sourceServers: { scim: sourceServer },
    env: FIXTURE_ENV,
    port: 0,
    handleSignals: false,
    logger,
    ...extra,
  });
  servers.push(server);
  const client = new Client({ name: 'arazzo-mcp-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
  clients.push(client);
  return client;
}

const text = (result: unknown) => (result as { content: { text: string }[] }).content[0]?.text;

let client: Client;

beforeAll(async () => {
  api = await startFixtureApi();
  files = writeFixtures(tempDir(), api.url);
  client = await serve(`${api.url}/scim2`);
});

afterAll(async () => {
  for (const c of clients) await c.close();
  for (const s of servers) await s.close();
});

describe('arazzo-mcp over Streamable HTTP against a fixture API', () => {
  it('lists one tool per workflow, shaped as the reference server shapes them', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => [t.name, t.description])).toEqual([
      [
        'search_users',
        'Search users with a SCIM filter. When error is set (not None) the call failed and error says why.',
      ],
      ['get_user_by_id', 'Get one user by id.\nThe whole response body is returned as user.'],
      ['create_user', 'Create a user from a SCIM user object given as JSON.'],
      ['delete_user', 'Execute the deleteUser workflow'],
    ]);
    expect(tools[0]?.inputSchema).toEqual({
      type: 'object',
      properties: { count: { type: 'integer' }, filter: { type: 'string' } },
      required: ['count', 'filter'],
    });
    expect(tools[1]?.inputSchema.properties).toEqual({ userId: { type: 'string' } });
    expect(tools[2]?.inputSchema.properties).toEqual({ user: { type: 'string' } });
    expect(tools[0]?.outputSchema?.properties).toEqual({ users: {}, error: {}, errorStatus: {} });
  });

  it('runs a workflow and prints its outputs as a Python dict', async () => {
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'userName eq "alice"', count: 5 },
    });
    expect(text(result)).toBe(
      "Workflow Success. Outputs: {'users': [{'id': 'u1', 'userName': 'alice'}], 'error': None, 'errorStatus': None}",
    );
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({
      users: [{ id: 'u1', userName: 'alice' }],
      error: null,
      errorStatus: null,
    });
    expect(api.tokenScopes.at(-1)).toBe('internal_user_mgt_list');
  });

  it('returns a 4xx as Workflow Success with error and errorStatus set', async () => {
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'nonsense', count: 1 },
    });
    expect(text(result)).toBe(
      "Workflow Success. Outputs: {'users': None, 'error': 'Invalid filter', 'errorStatus': '400'}",
    );
    expect(result.isError).toBe(false);
  });

  it('puts a 404 error body inside user, quoting as Python does', async () => {
    const found = await client.callTool({ name: 'get_user_by_id', arguments: { userId: 'u2' } });
    expect(text(found)).toBe(
      `Workflow Success. Outputs: {'user': {'id': 'u2', 'userName': 'oneil', 'name': {'givenName': "O'Neil"}}}`,
    );
    const missing = await client.callTool({
      name: 'get_user_by_id',
      arguments: { userId: 'nobody' },
    });
    expect(text(missing)).toBe(
      "Workflow Success. Outputs: {'user': {'schemas': ['urn:ietf:params:scim:api:messages:2.0:Error'], 'detail': 'User not found', 'status': '404'}}",
    );
  });

  it('parses an object argument given as a JSON string', async () => {
    const created = await client.callTool({
      name: 'create_user',
      arguments: { user: '{"userName": "bob"}' },
    });
    expect(text(created)).toMatch(
      /^Workflow Success\. Outputs: \{'id': 'u\d+', 'userName': 'bob', 'error': None\}$/,
    );
    const invalid = await client.callTool({ name: 'create_user', arguments: { user: '{bob}' } });
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toContain("argument 'user' must be a JSON object encoded as a string");
  });

  it('prints the execution result for a workflow without outputs', async () => {
    const result = await client.callTool({ name: 'delete_user', arguments: { userId: 'u1' } });
    expect(text(result)).toBe(
      "Workflow Result: WorkflowExecutionResult(status=workflow_complete, workflow_id='deleteUser', outputs={}, inputs={'userId': 'u1'}, error=None)",
    );
  });

  it('fails schema validation for missing and mistyped arguments', async () => {
    const missing = await client.callTool({ name: 'search_users', arguments: { filter: 'x' } });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain("missing required argument 'count'");
    const mistyped = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'x', count: 'five' },
    });
    expect(mistyped.isError).toBe(true);
    expect(text(mistyped)).toContain("argument 'count' must be integer");
  });

  it('reports an unreachable API as a tool error naming the step, not applied', async () => {
    const down = await serve('http://127.0.0.1:9/scim2');
    const result = await down.callTool({
      name: 'search_users',
      arguments: { filter: 'userName eq "alice"', count: 1 },
    });
    expect(text(result)).toBe(
      'Workflow Error: step "search": GET http://127.0.0.1:9/scim2/Users: connection refused\nFailure: connection. Applied: no — nothing was changed; retrying is safe.',
    );
    expect(result.isError).toBe(true);
  });

  it('requests a token for every call, or once with --token-cache', async () => {
    const search = (mcp: Client) =>
      mcp.callTool({ name: 'search_users', arguments: { filter: '', count: 1 } });
    const before = api.tokenScopes.length;
    await search(client);
    await search(client);
    expect(api.tokenScopes.length - before).toBe(2);

    const cached = await serve(`${api.url}/scim2`, { tokenCache: true });
    const start = api.tokenScopes.length;
    await search(cached);
    await search(cached);
    expect(api.tokenScopes.length - start).toBe(1);
  });

  it('refuses to start when two workflows become the same tool', async () => {
    await expect(
      startArazzoMcpHttp({
        arazzo: files.collision,
        env: FIXTURE_ENV,
        port: 0,
        handleSignals: false,
        logger,
      }),
    ).rejects.toThrow(ToolShapeError);
  });
});
