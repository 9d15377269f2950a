import { createArazzoMcpApp, createToolCatalog } from '@mcp-identity/arazzo-mcp';
import { createLogger } from '@mcp-identity/common';
import { startTestServer, useTempDir } from '@mcp-identity/common/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureApi, writeFixtures } from './support/fixture-api.js';
import { GET_USER_WORKFLOWS } from './support/get-user-workflow.js';
import { stdioServeParameters } from './support/serve-bin.js';

/*
 * Both protocol eras at one URL (MCP 2026-07-28, Versioning): the SDK 2.4 client pinned to
 * 2026-07-28 and in auto mode gets the modern era, the SDK 1.x client the legacy one, with
 * the same tools; the modern transport's refusals (the legacy lifecycle's counter-offer is in
 * http.test.ts).
 */

const MODERN = '2026-07-28';
/** Every tool call that reached the catalog's runner: what a refused request must not do. */
const runs: unknown[] = [];
const catalog = createToolCatalog(GET_USER_WORKFLOWS, {
  run: async (_workflowId, inputs) => {
    runs.push(inputs);
    return { kind: 'completed' as const, outputs: { user: { id: inputs.userId } } };
  },
});
let mcpUrl: URL;

beforeAll(async () => {
  const logger = createLogger({ level: 'silent', pretty: false });
  mcpUrl = new URL(`${(await startTestServer(createArazzoMcpApp({ catalog, logger }))).url}/mcp`);
});

const modernClient = (mode: 'auto' | { pin: string }) =>
  new Client({ name: 'modern-era-test', version: '1.0.0' }, { versionNegotiation: { mode } });

/** A modern POST as a client builds it: headers mirroring the body, `_meta` envelope. */
function postModern(
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string> = {},
  version = MODERN,
) {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': version,
      'mcp-method': method,
      ...(typeof params.name === 'string' && { 'mcp-name': params.name }),
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
}

describe('the SDK 2.4 client over Streamable HTTP', () => {
  it.each([
    ['pinned to 2026-07-28', { pin: MODERN }],
    ['in auto mode', 'auto'],
  ] as const)('%s: discovers the modern era, lists and calls the tools', async (_mode, mode) => {
    const client = modernClient(mode);
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect(client.getDiscoverResult()).toMatchObject({
      supportedVersions: [MODERN],
      capabilities: { tools: { listChanged: false } },
    });
    const { tools } = await client.listTools();
    expect(tools).toEqual(catalog.list());
    const result = await client.callTool({ name: 'get_user', arguments: { userId: 'u1' } });
    expect(result).toMatchObject({ structuredContent: { user: { id: 'u1' } }, isError: false });
    await client.close();
  });

  it('sees the same tools as the SDK 1.x client, which stays in the legacy era', async () => {
    const legacy = new LegacyClient({ name: 'legacy-era-test', version: '1.0.0' });
    await legacy.connect(new LegacyTransport(mcpUrl));
    expect(legacy.getServerVersion()?.name).toBe('arazzo-mcp');
    const modern = modernClient({ pin: MODERN });
    await modern.connect(new StreamableHTTPClientTransport(mcpUrl));
    expect((await modern.listTools()).tools).toEqual((await legacy.listTools()).tools);
    await Promise.all([legacy.close(), modern.close()]);
  });
});

describe('modern requests, raw', () => {
  it('answers server/discover with the versions, the capabilities and public cache hints', async () => {
    const response = await postModern('server/discover', {});
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: {
        resultType: 'complete',
        supportedVersions: [MODERN],
        capabilities: { tools: { listChanged: false } },
        ttlMs: 60_000,
        cacheScope: 'public',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'arazzo-mcp', version: '0.1.0' } },
      },
    });
  });

  it('marks tools/list cacheable by anyone: the list is the same for every caller', async () => {
    const body = (await (await postModern('tools/list', {})).json()) as { result: object };
    expect(body.result).toMatchObject({
      ttlMs: 60_000,
      cacheScope: 'public',
      tools: catalog.list(),
    });
  });

  it('refuses a tool call whose Mcp-Name header names another tool, without running it', async () => {
    const before = runs.length;
    const response = await postModern(
      'tools/call',
      { name: 'get_user', arguments: { userId: 'u1' } },
      { 'mcp-name': 'delete_user' },
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: 7, error: { code: -32020 } });
    const method = await postModern('tools/list', {}, { 'mcp-method': 'tools/call' });
    expect(method.status).toBe(400);
    expect(await method.json()).toMatchObject({ error: { code: -32020 } });
    expect(runs.length).toBe(before);
  });

  it('never serves a modern message inside a batch, which the legacy era would accept', async () => {
    const before = runs.length;
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'get_user', arguments: { userId: 'u1' }, _meta: envelope },
    });
    const response = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify([call(1), call(2)]),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32600 } });
    expect(runs.length).toBe(before);
  });

  it('answers a modern version it does not speak with the versions it does', async () => {
    const response = await postModern('tools/list', {}, {}, '2099-01-01');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 7,
      error: { code: -32022, data: { supported: [MODERN], requested: '2099-01-01' } },
    });
  });
});

const tempDir = useTempDir('arazzo-mcp-modern-stdio-');

describe('the SDK 2.4 client over stdio', () => {
  let files: ReturnType<typeof writeFixtures>;
  let apiUrl: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const api = await startFixtureApi();
    apiUrl = api.url;
    close = () => api.close();
    files = writeFixtures(tempDir(), api.url);
  });

  afterAll(() => close?.());

  it.each([
    ['pinned to 2026-07-28', { pin: MODERN }],
    ['in auto mode', 'auto'],
  ] as const)(
    '%s: speaks the modern era and calls a tool',
    async (_mode, mode) => {
      const client = modernClient(mode);
      await client.connect(new StdioClientTransport(stdioServeParameters(files.users, apiUrl)));
      expect(client.getProtocolEra()).toBe('modern');
      const result = await client.callTool({
        name: 'search_users',
        arguments: { filter: 'userName eq "alice"', count: 5 },
      });
      expect(result.structuredContent).toMatchObject({ users: [{ id: 'u1', userName: 'alice' }] });
      await client.close();
    },
    30_000,
  );
});
