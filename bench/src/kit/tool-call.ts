import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch } from 'undici';

/**
 * How one tool call ended, as far as the caller can see it. What matters for a write is
 * whether the `tools/call` request reached the server: before it did (connecting, the
 * `initialize` exchange, a refused connection) nothing can have been applied.
 */
export type ToolCallOutcome =
  | { kind: 'result'; result: CallToolResult }
  /** A JSON-RPC error answered the call (an invalid call, or a server's own refusal). */
  | { kind: 'rpc-error'; code: number; message: string }
  /** An HTTP error status answered the call, or the `initialize` before it. */
  | { kind: 'http'; status: number; during: 'connect' | 'call'; body: string }
  /** The call never reached the server: connecting failed, or the connection was refused. */
  | { kind: 'not-sent'; error: string }
  /** The call went out and no answer came back (a reset connection, a timeout). */
  | { kind: 'lost'; error: string };

/**
 * One tool call with the official MCP SDK client on a connection of its own (a reused
 * keep-alive connection to a service that was just killed would fail a call that never went
 * out, and look like a lost one). `ca`: the only certificate authority an https URL may chain to.
 */
export async function callTool(
  url: string,
  accessToken: string,
  tool: string,
  args: Record<string, unknown>,
  options: { ca?: string } = {},
): Promise<ToolCallOutcome> {
  const dispatcher = new Agent({ connect: options.ca ? { ca: options.ca } : {} });
  let httpError: { status: number; body: string } | undefined;
  let refused = false;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
    fetch: async (input, init) => {
      // Only the POSTs carry the exchange; the client's optional GET stream does not.
      const post = init?.method === 'POST';
      try {
        const response = await fetch(String(input), { ...(init as object), dispatcher } as never);
        if (post && !response.ok) {
          httpError = { status: response.status, body: await response.clone().text() };
        }
        return response as unknown as Response;
      } catch (error) {
        if (post) refused = (error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
        throw error;
      }
    },
  });
  const client = new Client({ name: 'bench-soak', version: '0.1.0' });
  try {
    try {
      await client.connect(transport);
    } catch (error) {
      return httpError
        ? { kind: 'http', status: httpError.status, during: 'connect', body: httpError.body }
        : { kind: 'not-sent', error: messageOf(error) };
    }
    try {
      const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
      return { kind: 'result', result };
    } catch (error) {
      if (httpError) {
        return { kind: 'http', status: httpError.status, during: 'call', body: httpError.body };
      }
      if (refused) return { kind: 'not-sent', error: messageOf(error) };
      if (error instanceof McpError && !LOCAL_ERRORS.has(error.code)) {
        return { kind: 'rpc-error', code: error.code, message: error.message };
      }
      return { kind: 'lost', error: messageOf(error) };
    }
  } finally {
    await client.close().catch(() => undefined);
    await dispatcher.destroy();
  }
}

/** Codes the SDK client raises itself, with no answer from the server behind them. */
const LOCAL_ERRORS = new Set<number>([ErrorCode.RequestTimeout, ErrorCode.ConnectionClosed]);

function messageOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const message = (error as Error).message;
  return cause?.code ? `${message} (${cause.code})` : message;
}
