import { createApp, createLogger, type RunningServer } from '@mcp-identity/common';
import { describeBrowser, startTestServer, useTempDir } from '@mcp-identity/common/testing';
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BrowserLoginProvider } from './support/browser-login.js';
import { startBuiltinServer } from './support/builtin-server.js';

/*
 * Area A (`serve --auth builtin`) with the SDK 2.4 client pinned to MCP 2026-07-28, given
 * only the /mcp URL: the modern probe (`server/discover`) meets the 401, and the client runs
 * the authorization it describes (RFC 9728 and RFC 8414 discovery, RFC 7591 registration, the
 * user signing in in Chromium, the code exchanged with PKCE and the RFC 9207 `iss` checked),
 * then speaks the modern era; the same client in auto mode lands there too. The SDK 1.x
 * client's flow is builtin-auth.test.ts.
 */
const tempDir = useTempDir('arazzo-mcp-modern-oauth-');
let server: RunningServer;
let admin = { email: '', password: '' };
let callback: RunningServer;

beforeAll(async () => {
  server = await startBuiltinServer(tempDir(), {
    dataDir: tempDir(),
    onInitialAccount: (account) => {
      admin = account;
    },
  });
  // The client's redirect target: a real loopback listener, as a native client's would be.
  const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
  app.get('/callback', (_request, reply) => reply.type('text/html').send('<h1>Signed in</h1>'));
  callback = await startTestServer(app);
});

afterAll(async () => {
  await callback?.close();
  await server?.close();
});

/** The tools of the fixture workflows (fixtures/users.arazzo.yaml). */
const USER_TOOLS = ['search_users', 'get_user_by_id', 'create_user', 'delete_user'];
const SEARCH_ALICE = {
  name: 'search_users',
  arguments: { filter: 'userName eq "alice"', count: 5 },
};
const ALICE = { users: [{ id: 'u1', userName: 'alice' }], error: null, errorStatus: null };

describeBrowser('Area A with the SDK 2.4 client at 2026-07-28', (browser) => {
  it('given only the /mcp URL: signs in through OAuth, discovers, lists and calls a tool; auto mode too', async () => {
    const mcpUrl = new URL(`${server.url}/mcp`);
    const provider = new BrowserLoginProvider(browser, admin, `${callback.url}/callback`);
    const pinned = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const;
    // The probe meets the 401: registration, then the user at the authorization endpoint.
    const probe = new Client({ name: 'modern-oauth-e2e', version: '1.0.0' }, pinned);
    const probing = probe.connect(
      new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }),
    );
    await expect(probing).rejects.toBeInstanceOf(UnauthorizedError);
    const [authorizationUrl] = provider.authorizationUrls;
    expect({
      registered: provider.client?.client_id !== undefined,
      endpoint: authorizationUrl && `${authorizationUrl.origin}${authorizationUrl.pathname}`,
      resource: authorizationUrl?.searchParams.get('resource'),
      iss: provider.landed?.searchParams.get('iss'),
    }).toEqual({
      registered: true,
      endpoint: `${server.url}/oauth/authorize`,
      resource: mcpUrl.href,
      iss: server.url,
    });

    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(provider.landed?.searchParams ?? new URLSearchParams());
    expect(decodeJwt(provider.current?.access_token ?? '')).toMatchObject({
      scope: 'mcp:tools',
      aud: mcpUrl.href,
    });

    const client = new Client({ name: 'modern-oauth-e2e', version: '1.0.0' }, pinned);
    await client.connect(transport);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getDiscoverResult()?.supportedVersions).toEqual(['2026-07-28']);
    expect(await client.discover()).toMatchObject({ capabilities: { tools: {} } });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(USER_TOOLS);
    expect((await client.callTool(SEARCH_ALICE)).structuredContent).toEqual(ALICE);
    await client.close();

    // The same user's token, in auto mode: the probe finds the modern era.
    const auto = new Client(
      { name: 'modern-oauth-e2e', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await auto.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    expect(auto.getProtocolEra()).toBe('modern');
    expect((await auto.callTool(SEARCH_ALICE)).structuredContent).toEqual(ALICE);
    await auto.close();
  });
});
