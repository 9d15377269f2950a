import { obtainTokenWithLoginForm } from '@mcp-identity/oauth';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Area A's whole OAuth 2.1 flow as a client and a person at a browser would do
 * it (registration, the login form, the code with PKCE, the token), then a tool
 * call on /mcp with the official MCP SDK client.
 */
export async function areaALoginAndCall(
  baseUrl: string,
  account: { email: string; password: string },
  tool: string,
  args: Record<string, unknown>,
): Promise<{ accessToken: string; result: CallToolResult }> {
  const { accessToken } = await obtainTokenWithLoginForm(baseUrl, account);
  const client = new Client({ name: 'mcp-identity-demo', version: '0.1.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
    }),
  );
  try {
    const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
    return { accessToken, result };
  } finally {
    await client.close();
  }
}
