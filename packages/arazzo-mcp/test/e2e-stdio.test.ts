import { useTempDir } from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureApi, startFixtureApi, writeFixtures } from './support/fixture-api.js';
import { stdioServeParameters } from './support/serve-bin.js';

const tempDir = useTempDir('arazzo-mcp-stdio-');
let api: FixtureApi;
let client: Client;

beforeAll(async () => {
  api = await startFixtureApi();
  const files = writeFixtures(tempDir(), api.url);
  client = new Client({ name: 'arazzo-mcp-stdio', version: '1.0.0' });
  await client.connect(new StdioClientTransport(stdioServeParameters(files.users, api.url)));
}, 30_000);

afterAll(async () => {
  await client?.close();
});

describe('arazzo-mcp serve --transport stdio (the bin, spawned)', () => {
  it('lists the tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'search_users',
      'get_user_by_id',
      'create_user',
      'delete_user',
    ]);
  });

  it('calls a tool against the fixture API', async () => {
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'userName eq "alice"', count: 1 },
    });
    expect((result.content as { text: string }[])[0]?.text).toBe(
      "Workflow Success. Outputs: {'users': [{'id': 'u1', 'userName': 'alice'}], 'error': None, 'errorStatus': None}",
    );
  });
});
