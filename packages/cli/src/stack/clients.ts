import { readFileSync } from 'node:fs';
import { UnexpectedResponseError } from '@mcp-identity/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Agent } from 'undici';
import type { StackLayout } from './layout.js';
import { fetchNamingUrl } from './network.js';

/** An undici agent that trusts one CA (the stack's), and no other. */
export function trustingAgent(certFile: string): Agent {
  return new Agent({ connect: { ca: readFileSync(certFile, 'utf8') } });
}

/** A client-credentials token from the identity provider (HTTP Basic, RFC 6749 §4.4). */
export async function clientCredentialsToken(
  layout: StackLayout,
  client: { clientId: string; clientSecret: string },
  scopes: string[],
): Promise<{ accessToken: string; scope: string; expiresIn: number }> {
  const dispatcher = trustingAgent(layout.caFile);
  try {
    const basic = Buffer.from(
      `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
    ).toString('base64');
    const response = await fetchNamingUrl(layout.idp.tokenUrl, {
      method: 'POST',
      dispatcher,
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: scopes.join(' ') }),
    });
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // Reported below with the status; an IdP error page is not JSON.
    }
    if (!response.ok || typeof body.access_token !== 'string') {
      throw new UnexpectedResponseError(
        `token request refused (HTTP ${response.status}): ${body.error_description ?? body.error ?? 'no token'}`,
      );
    }
    return {
      accessToken: body.access_token,
      scope: String(body.scope ?? ''),
      expiresIn: Number(body.expires_in),
    };
  } finally {
    await dispatcher.close();
  }
}

/** What an MCP call through the gateway ended with: a tool result, or the HTTP refusal. */
export type GatewayCallOutcome =
  | { kind: 'result'; result: CallToolResult }
  | { kind: 'refused'; status: number; challenge: string | null; body: string };

/**
 * Calls one tool through the gateway with the official MCP SDK client. A 401 or
 * 403 from the gateway is reported with its WWW-Authenticate challenge rather
 * than thrown, because that is the answer a caller needs to see.
 */
export async function callToolThroughGateway(
  layout: StackLayout,
  accessToken: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<GatewayCallOutcome> {
  const dispatcher = trustingAgent(layout.caFile);
  let refusal: GatewayCallOutcome | undefined;
  const transport = new StreamableHTTPClientTransport(new URL(layout.gateway.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
    fetch: async (url, init) => {
      const response = await fetchNamingUrl(String(url), {
        ...(init as object),
        dispatcher,
      } as never);
      if (response.status === 401 || response.status === 403) {
        refusal = {
          kind: 'refused',
          status: response.status,
          challenge: response.headers.get('www-authenticate'),
          body: await response.clone().text(),
        };
      }
      return response as unknown as Response;
    },
  });
  const client = new Client({ name: 'mcp-identity-cli', version: '0.1.0' });
  try {
    await client.connect(transport);
    const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
    return { kind: 'result', result };
  } catch (error) {
    if (refusal) return refusal;
    throw new UnexpectedResponseError(saidOnce((error as Error).message), { cause: error });
  } finally {
    await client.close().catch(() => undefined);
    await dispatcher.close();
  }
}

/**
 * The SDK prefixes "MCP error <code>: " to a JSON-RPC error's message, and a
 * server built on the SDK already sent its message with that prefix: say it once.
 */
export function saidOnce(message: string): string {
  return message.replace(/^(MCP error -?\d+: )(?:MCP error -?\d+: )+/, '$1');
}

/** The text of a tool result (the tools answer with one text item). */
export function resultText(result: CallToolResult): string {
  return result.content
    .map((item) => (item.type === 'text' ? item.text : `[${item.type}]`))
    .join('\n');
}
