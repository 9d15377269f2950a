import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { ALICE, hostForSuite } from './fixtures/host.js';
import { FormFillingProvider } from './fixtures/sdk-provider.js';

describe('end to end with the official MCP SDK client', () => {
  const host = hostForSuite();

  it('discovers, registers, authorizes, exchanges, calls tools and refreshes', async () => {
    const provider = new FormFillingProvider(ALICE);
    const mcpUrl = new URL(`${host.url}/mcp`);

    const first = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);

    // Discovery and registration happened; the authorize URL carries PKCE S256 and the resource.
    expect(provider.clientInfo?.client_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const authorizeUrl = provider.authorizationUrls[0];
    expect(authorizeUrl?.origin + (authorizeUrl?.pathname ?? '')).toBe(
      `${host.url}/oauth/authorize`,
    );
    expect(authorizeUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizeUrl?.searchParams.get('resource')).toBe(`${host.url}/mcp`);
    expect(provider.authorizationCode).toBeDefined();

    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await transport.finishAuth(provider.authorizationCode ?? '');
    expect(provider.currentTokens?.scope).toBe('mcp:tools');

    const client = new Client({ name: 'sdk-e2e', version: '1.0.0' });
    await client.connect(transport);
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toEqual(['whoami']);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: `you are ${ALICE.id}` }]);

    // An access token the server no longer accepts makes the SDK refresh (with rotation).
    const before = provider.currentTokens;
    provider.currentTokens = { ...before!, access_token: 'expired.or.revoked' };
    const again = await client.callTool({ name: 'whoami', arguments: {} });
    expect(again.content).toEqual([{ type: 'text', text: `you are ${ALICE.id}` }]);
    expect(provider.savedTokens).toHaveLength(2);
    expect(provider.currentTokens?.refresh_token).not.toBe(before?.refresh_token);
    expect(provider.currentTokens?.access_token).not.toBe('expired.or.revoked');
    await client.close();
  });
});
