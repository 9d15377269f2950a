import { join } from 'node:path';
import { createApp, createLogger, type RunningServer } from '@mcp-identity/common';
import {
  BrowserSignInProvider,
  describeBrowser,
  Sdk2BrowserSignInProvider,
  startTestServer,
  useTempDir,
} from '@mcp-identity/common/testing';
import {
  InsufficientScopeError,
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError as ModernUnauthorizedError,
} from '@modelcontextprotocol/client';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callToolThroughGateway, clientCredentialsToken } from '../src/stack/clients.js';
import { READ_ONLY_SCOPES } from '../src/stack/sample-data.js';
import type { RunningStack } from '../src/stack/start.js';
import { fetchTrustingCa, idpBrowserLogin } from './support/sdk-login.js';
import { startQuietStack } from './support/stack-helpers.js';

// `up`'s whole stack (the packages' dist/bin.js: run `npx tsc -b` first), and the official
// MCP SDK client given nothing but the gateway's URL, as a user's MCP client would be.
const STACK_MS = 120_000;
const tempDir = useTempDir('cli-standard-client-');
let stack: RunningStack;
let callback: RunningServer;

beforeAll(async () => {
  stack = await startQuietStack(join(tempDir(), 'data'));
  // The client's redirect target: a real loopback listener, as a native client's would be.
  const app = createApp({ logger: createLogger({ level: 'silent', pretty: false }) });
  app.get('/callback', (_request, reply) => reply.type('text/html').send('<h1>Signed in</h1>'));
  callback = await startTestServer(app);
}, STACK_MS);

afterAll(async () => {
  await callback?.close();
  await stack?.stop();
}, STACK_MS);

async function searchAsClientApp(userName: string): Promise<Array<{ id: string }>> {
  const { accessToken } = await clientCredentialsToken(stack.layout, stack.secrets.clientApp, [
    'internal_user_mgt_list',
  ]);
  const outcome = await callToolThroughGateway(stack.layout, accessToken, 'search_users', {
    filter: `userName eq ${userName}`,
    count: 1,
  });
  if (outcome.kind === 'refused') throw new Error(`search refused with ${outcome.status}`);
  return (outcome.result.structuredContent as { users: Array<{ id: string }> | null }).users ?? [];
}

/** What these tests ask of either SDK's client. */
interface ToolClient {
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  callTool(request: {
    name: string;
    arguments: Record<string, unknown>;
  }): Promise<Record<string, unknown>>;
}

/**
 * The read-only user's view: the tools its token may call listed, and only those (the proxy
 * filters lists by its rules: `delete_user` is not among them), `search_users` finding alice;
 * her id.
 */
async function listsAndFindsAlice(client: ToolClient): Promise<string> {
  const { tools } = await client.listTools();
  const names = tools.map((tool) => tool.name);
  // The three of the 21 its list and view scopes allow (it saw all 21 before issue 42).
  expect([...names].sort()).toEqual(['get_user', 'list_users', 'search_users']);
  const found = await client.callTool({
    name: 'search_users',
    arguments: { filter: 'userName eq alice', count: 1 },
  });
  expect(found.isError).toBe(false);
  const { users } = found.structuredContent as { users: Array<{ id: string; userName: string }> };
  expect(users.map((user) => user.userName)).toEqual(['alice']);
  return users[0]?.id ?? '';
}

describeBrowser(
  'the official MCP SDK client given only the gateway URL',
  (browser) => {
    const listeners = [
      ['HTTPS', () => stack.layout.gateway.mcpUrl],
      ['HTTP', () => stack.layout.gateway.plainMcpUrl],
    ] as const;

    it.each(listeners)(
      'through the %s listener: discovers, registers, signs the read-only user in in Chromium, searches, and is refused delete_user with 403 insufficient_scope',
      async (_name, mcpUrlOf) => {
        const mcpUrl = new URL(mcpUrlOf());
        const fetch = fetchTrustingCa(stack.layout.caFile);
        const provider = idpBrowserLogin(
          BrowserSignInProvider,
          browser,
          stack.secrets.readOnlyUser,
          `${callback.url}/callback`,
        );
        const first = new Client({ name: 'standard-client-e2e', version: '1.0.0' });
        await expect(
          first.connect(
            new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch }),
          ),
        ).rejects.toBeInstanceOf(UnauthorizedError);

        // Registered at the IdP, sent there to sign in, with the resource it connected to and
        // the scopes the gateway's challenge named.
        expect(provider.client?.client_id).toEqual(expect.any(String));
        const authorization = provider.authorizationUrls[0];
        expect(authorization?.origin).toBe(stack.layout.idp.url);
        expect(authorization?.searchParams.get('resource')).toBe(mcpUrl.href);
        expect(authorization?.searchParams.get('code_challenge_method')).toBe('S256');
        expect(authorization?.searchParams.get('scope')?.split(' ')).toEqual(
          expect.arrayContaining(['internal_user_mgt_list', 'internal_user_mgt_delete']),
        );
        expect(provider.code).toEqual(expect.any(String));

        const transport = new StreamableHTTPClientTransport(mcpUrl, {
          authProvider: provider,
          fetch,
        });
        await transport.finishAuth(provider.code ?? '');
        // The token is bound to the gateway's resource and carries only what the user's role
        // allows, however much the client asked for.
        const claims = decodeJwt(provider.current?.access_token ?? '');
        expect([claims.aud].flat()).toContain(mcpUrl.href);
        expect(String(claims.scope).split(' ').sort()).toEqual([...READ_ONLY_SCOPES].sort());

        const client = new Client({ name: 'standard-client-e2e', version: '1.0.0' });
        await client.connect(transport);
        const aliceId = await listsAndFindsAlice(client);

        // The gateway refuses with the scope the tool needs; the SDK tries to upscope once (a
        // refresh cannot widen what the role grants) and gives up.
        const refused = await fetch(mcpUrl, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${provider.current?.access_token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 'delete',
            method: 'tools/call',
            params: { name: 'delete_user', arguments: { userId: aliceId } },
          }),
        });
        expect(refused.status).toBe(403);
        const challenge = refused.headers.get('www-authenticate') ?? '';
        expect(challenge).toMatch(/^Bearer /);
        expect(challenge).toContain('error="insufficient_scope"');
        expect(challenge).toContain('scope="internal_user_mgt_delete"');
        await expect(
          client.callTool({ name: 'delete_user', arguments: { userId: aliceId } }),
        ).rejects.toThrow(/403 after trying upscoping/);
        expect(await searchAsClientApp('alice')).toEqual([
          expect.objectContaining({ id: aliceId }),
        ]);
        await client.close();
      },
      STACK_MS,
    );
  },
  () => ({
    trustedCertificates: [stack.layout.idp.certFile],
  }),
);

describeBrowser(
  'the SDK 2.4 client at MCP 2026-07-28 given only the gateway URL',
  (browser) => {
    const PINNED = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const;
    const CLIENT = { name: 'modern-client-e2e', version: '1.0.0' };

    it(
      'pinned: discovers, registers, signs the read-only user in in Chromium, lists and searches, is refused delete_user with 403 insufficient_scope before the upstream; auto mode lands on the same era',
      async () => {
        const mcpUrl = new URL(stack.layout.gateway.mcpUrl);
        const fetch = fetchTrustingCa(stack.layout.caFile);
        const provider = idpBrowserLogin(
          Sdk2BrowserSignInProvider,
          browser,
          stack.secrets.readOnlyUser,
          `${callback.url}/callback`,
        );
        // The modern probe (server/discover) meets the gateway's 401: registration at the IdP,
        // then the user at its authorization endpoint, for the resource it connected to.
        const probe = new ModernClient(CLIENT, PINNED);
        await expect(
          probe.connect(new ModernTransport(mcpUrl, { authProvider: provider, fetch })),
        ).rejects.toBeInstanceOf(ModernUnauthorizedError);
        const [authorization] = provider.authorizationUrls;
        expect({
          registered: typeof provider.client?.client_id,
          endpoint: authorization && `${authorization.origin}${authorization.pathname}`,
          resource: authorization?.searchParams.get('resource'),
          iss: provider.landed?.searchParams.get('iss'),
        }).toEqual({
          registered: 'string',
          endpoint: `${stack.layout.idp.url}/oauth2/authorize`,
          resource: mcpUrl.href,
          iss: stack.layout.idp.issuer,
        });

        // Refusals come back to the caller (no second sign-in that could not widen the role).
        const transport = new ModernTransport(mcpUrl, {
          authProvider: provider,
          fetch,
          onInsufficientScope: 'throw',
        });
        await transport.finishAuth(provider.landed?.searchParams ?? new URLSearchParams());
        const claims = decodeJwt(provider.current?.access_token ?? '');
        expect([claims.aud].flat()).toContain(mcpUrl.href);
        expect(String(claims.scope).split(' ').sort()).toEqual([...READ_ONLY_SCOPES].sort());

        const client = new ModernClient(CLIENT, PINNED);
        await client.connect(transport);
        expect(client.getProtocolEra()).toBe('modern');
        expect(client.getDiscoverResult()?.supportedVersions).toContain('2026-07-28');
        expect(await client.discover()).toMatchObject({ capabilities: { tools: {} } });
        const aliceId = await listsAndFindsAlice(client);

        // The gateway's 403 with `WWW-Authenticate: Bearer error="insufficient_scope"` naming
        // the scope the tool's rule needs, which is what the SDK's InsufficientScopeError means.
        const refusal = client.callTool({ name: 'delete_user', arguments: { userId: aliceId } });
        await expect(refusal).rejects.toBeInstanceOf(InsufficientScopeError);
        await expect(refusal).rejects.toMatchObject({ requiredScope: 'internal_user_mgt_delete' });
        // The call never reached the SCIM MCP server: alice is still there.
        expect(await searchAsClientApp('alice')).toEqual([
          expect.objectContaining({ id: aliceId }),
        ]);
        await client.close();

        // The same user's token in auto mode: the probe finds the modern era at the gateway.
        const auto = new ModernClient(CLIENT, { versionNegotiation: { mode: 'auto' } });
        await auto.connect(new ModernTransport(mcpUrl, { authProvider: provider, fetch }));
        expect(auto.getProtocolEra()).toBe('modern');
        const again = await auto.callTool({
          name: 'search_users',
          arguments: { filter: 'userName eq alice', count: 1 },
        });
        expect(again.structuredContent).toMatchObject({ users: [{ id: aliceId }] });
        await auto.close();
      },
      STACK_MS,
    );
  },
  () => ({
    trustedCertificates: [stack.layout.idp.certFile],
  }),
);

// MCP Inspector's web UI (0.15, the version npx resolves on Node 20) runs discovery,
// registration and the token request from the page at http://localhost:6274, so each of
// those endpoints, and /mcp, must answer its CORS preflight and expose the challenge.
describe('CORS for a browser-based client (MCP Inspector at http://localhost:6274)', () => {
  const origin = 'http://localhost:6274';
  const fetchCa = () => fetchTrustingCa(stack.layout.caFile);

  async function endpoints(): Promise<Array<[string, 'GET' | 'POST']>> {
    const { layout } = stack;
    const metadataOf = async (url: string) =>
      (await (await fetchCa()(url)).json()) as Record<string, string>;
    const idpMetadata = await metadataOf(
      `${layout.idp.url}/.well-known/oauth-authorization-server/oauth2/token`,
    );
    const areaAMetadata = await metadataOf(
      `${layout.areaA.url}/.well-known/oauth-authorization-server`,
    );
    return [
      [layout.gateway.prmUrl, 'GET'],
      [layout.gateway.mcpUrl, 'POST'],
      [layout.gateway.plainMcpUrl, 'POST'],
      [`${layout.idp.url}/.well-known/oauth-authorization-server/oauth2/token`, 'GET'],
      [idpMetadata.registration_endpoint ?? '', 'POST'],
      [idpMetadata.token_endpoint ?? '', 'POST'],
      [`${layout.areaA.url}/.well-known/oauth-protected-resource`, 'GET'],
      [`${layout.areaA.url}/.well-known/oauth-authorization-server`, 'GET'],
      [areaAMetadata.registration_endpoint ?? '', 'POST'],
      [areaAMetadata.token_endpoint ?? '', 'POST'],
      [layout.areaA.mcpUrl, 'POST'],
    ];
  }

  it('answers every discovery, registration, token and MCP endpoint’s preflight', async () => {
    for (const [url, method] of await endpoints()) {
      const preflight = await fetchCa()(url, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': method,
          'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
        },
      });
      expect(preflight.status, url).toBeLessThan(300);
      expect(preflight.headers.get('access-control-allow-origin'), url).toBe(origin);
      const allowed = (preflight.headers.get('access-control-allow-methods') ?? '').toUpperCase();
      expect(allowed, url).toContain(method);
    }
  });

  it('lets the page read the 401 challenge of both MCP endpoints', async () => {
    for (const url of [stack.layout.gateway.mcpUrl, stack.layout.areaA.mcpUrl]) {
      const response = await fetchCa()(url, {
        method: 'POST',
        headers: {
          origin,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(response.status, url).toBe(401);
      expect(response.headers.get('access-control-allow-origin'), url).toBe(origin);
      expect(response.headers.get('access-control-expose-headers')?.toLowerCase(), url).toContain(
        'www-authenticate',
      );
    }
  });
});
