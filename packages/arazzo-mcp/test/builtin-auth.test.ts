import { AccountStore } from '@mcp-identity/arazzo-mcp';
import { createApp, createLogger, type RunningServer } from '@mcp-identity/common';
import { describeBrowser, startTestServer, useTempDir } from '@mcp-identity/common/testing';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserLoginProvider, CLIENT_NAME } from './support/browser-login.js';
import { startBuiltinServer } from './support/builtin-server.js';

const tempDir = useTempDir('arazzo-mcp-builtin-');
let server: RunningServer;
let dataDir: string;
let admin: { email: string; password: string };
const announced: Array<{ email: string; password: string }> = [];

beforeAll(async () => {
  dataDir = tempDir();
  server = await startBuiltinServer(tempDir(), {
    dataDir,
    initialAccountEmail: 'Owner@Example.com',
    onInitialAccount: (account) => announced.push(account),
  });
  admin = announced[0] ?? { email: '', password: '' };
});

afterAll(() => server?.close());

function login(body: unknown) {
  return fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function loginToken(): Promise<string> {
  const response = await login(admin);
  return ((await response.json()) as { access_token: string }).access_token;
}

function postMcp(authorization?: string) {
  return fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
}

const resourceMetadata = () => `${server.url}/.well-known/oauth-protected-resource`;

describe('serve --auth builtin: the first account', () => {
  it('is created once, with the configured e-mail and a generated password', () => {
    expect(announced).toEqual([
      { email: 'owner@example.com', password: expect.stringMatching(/^[\w-]{24}$/) },
    ]);
  });
});

describe('serve --auth builtin: the application login', () => {
  it('answers a Bearer JWT without mcp:tools, signed with the published key', async () => {
    const response = await login(admin);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 3600,
    });
    const claims = decodeJwt(body.access_token as string);
    expect(claims).toMatchObject({ iss: server.url, aud: `${server.url}/mcp`, email: admin.email });
    expect(claims.scope).toBeUndefined();
    const jwks = (await (await fetch(`${server.url}/oauth/jwks`)).json()) as {
      keys: { kid: string; alg: string }[];
    };
    const header = decodeProtectedHeader(body.access_token as string);
    expect(jwks.keys.map((key) => [key.kid, key.alg])).toEqual([[header.kid, header.alg]]);
  });

  it('names the bearer at /api/auth/me', async () => {
    const me = await fetch(`${server.url}/api/auth/me`, {
      headers: { authorization: `Bearer ${await loginToken()}` },
    });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ id: expect.any(String), email: 'owner@example.com' });
    const anonymous = await fetch(`${server.url}/api/auth/me`);
    expect(anonymous.status).toBe(401);
    const forged = await fetch(`${server.url}/api/auth/me`, {
      headers: { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' },
    });
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ error: 'invalid_token' });
  });

  it('refuses wrong credentials and malformed bodies with clear errors', async () => {
    const wrong = await login({ email: admin.email, password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({
      error: 'invalid_credentials',
      message: 'Invalid e-mail or password.',
    });
    const unknown = await login({ email: 'nobody@example.com', password: 'not the password' });
    expect(await unknown.json()).toEqual({
      error: 'invalid_credentials',
      message: 'Invalid e-mail or password.',
    });
    for (const body of ['{"email":', { email: admin.email }, [], { email: 1, password: 'x' }]) {
      const response = await login(body);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: expect.any(String) });
    }
  });

  it('throttles an account after 5 failed logins, even for the right password', async () => {
    // Accounts added while the server runs (the CLI's way) are seen at once.
    const store = AccountStore.open(dataDir);
    await store.add('victim@example.com', 'victim password');
    store.close();
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const response = await login({ email: 'victim@example.com', password: 'guess' });
      expect(response.status).toBe(401);
    }
    const blocked = await login({ email: 'VICTIM@example.com', password: 'victim password' });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await blocked.json()).toMatchObject({ error: 'too_many_requests' });
    // Other accounts are not locked out by it.
    expect((await login(admin)).status).toBe(200);
  });
});

describe('serve --auth builtin: the guard in front of /mcp', () => {
  it('answers 401 with exactly the resource-metadata Bearer challenge without a token', async () => {
    const response = await postMcp();
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="mcp", resource_metadata="${resourceMetadata()}"`,
    );
  });

  it('answers 401 to an invalid token', async () => {
    const response = await postMcp('Bearer not.a.jwt');
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="mcp", resource_metadata="${resourceMetadata()}"`,
    );
  });

  it('answers 403 insufficient_scope to a normal-login token', async () => {
    const response = await postMcp(`Bearer ${await loginToken()}`);
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="${resourceMetadata()}"`,
    );
  });

  it('publishes the discovery documents and leaves /health open', async () => {
    const prm = await (await fetch(resourceMetadata())).json();
    expect(prm).toEqual({
      resource: `${server.url}/mcp`,
      authorization_servers: [server.url],
      scopes_supported: ['mcp:tools'],
    });
    const metadata = (await (
      await fetch(`${server.url}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      issuer: server.url,
      token_endpoint: `${server.url}/oauth/token`,
      jwks_uri: `${server.url}/oauth/jwks`,
    });
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});

describeBrowser('serve --auth builtin with the official MCP SDK client', (browser) => {
  let callback: RunningServer;
  beforeAll(async () => {
    // The client's redirect target: a real loopback listener, as a native client's would be.
    const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
    app.get('/callback', (_request, reply) => reply.type('text/html').send('<h1>Signed in</h1>'));
    callback = await startTestServer(app);
  });

  it('given only the /mcp URL: discovers, registers, signs in in Chromium, gets a token, lists and calls a tool', async () => {
    const provider = new BrowserLoginProvider(browser, admin, `${callback.url}/callback`);
    const mcpUrl = new URL(`${server.url}/mcp`);
    const first = new Client({ name: 'builtin-auth-e2e', version: '1.0.0' });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client?.client_id).toMatch(/^[\w-]{43}$/);
    const authorizationUrl = provider.authorizationUrls[0];
    expect(`${authorizationUrl?.origin}${authorizationUrl?.pathname}`).toBe(
      `${server.url}/oauth/authorize`,
    );
    expect(authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    // The login page named the client by the name it registered (issue 19).
    expect(provider.shownClientName).toBe(CLIENT_NAME);
    expect(provider.code).toMatch(/^[\w-]{43}$/);

    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(provider.code ?? '');
    expect(provider.current?.scope).toBe('mcp:tools');
    expect(provider.current?.refresh_token).toEqual(expect.any(String));
    const accessClaims = decodeJwt(provider.current?.access_token ?? '');
    expect(accessClaims).toMatchObject({
      scope: 'mcp:tools',
      aud: `${server.url}/mcp`,
      client_id: provider.client?.client_id,
    });

    const client = new Client({ name: 'builtin-auth-e2e', version: '1.0.0' });
    await client.connect(transport);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'search_users',
      'get_user_by_id',
      'create_user',
      'delete_user',
    ]);
    const result = await client.callTool({
      name: 'search_users',
      arguments: { filter: 'userName eq "alice"', count: 5 },
    });
    expect(result.structuredContent).toEqual({
      users: [{ id: 'u1', userName: 'alice' }],
      error: null,
      errorStatus: null,
    });
    await client.close();
  });
});
