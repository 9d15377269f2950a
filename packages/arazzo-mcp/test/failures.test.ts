import { startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type FaultyApi,
  startFaultyApi,
  TOKEN_GRANTED,
} from '../../arazzo/test/fixtures/faulty-api.js';
import { FIXTURE_ENV, writeFixtures } from './support/fixture-api.js';

// Issue 37: while the identity provider was down every tool call looked like a success
// (isError false, empty structuredContent, "Workflow Error: …" text). Only a 4xx answer keeps
// that shape (spec §2.11 rule 5, with the SCIM error in `error`/`errorStatus`); every other
// failure is a tool error saying whether the operation may have been applied.

// Nothing listens on port 9 (discard) of the loopback interface: a refused connection.
const CLOSED = 'http://127.0.0.1:9';
const TIMEOUT_MS = 300;
const logger = createLogger({ level: 'silent', pretty: false });
const tempDir = useTempDir('arazzo-mcp-failures-');
const servers: RunningServer[] = [];
const clients: Client[] = [];
let idp: FaultyApi;
let client: Client;

/** The fixture user tools with their token endpoint at `tokenAt` and their API at `apiAt`. */
async function serve(tokenAt: string, apiAt: string): Promise<Client> {
  const files = writeFixtures(tempDir(), tokenAt);
  const server = await startArazzoMcpHttp({
    arazzo: files.users,
    sourceServers: { scim: `${apiAt}/scim2` },
    env: FIXTURE_ENV,
    port: 0,
    handleSignals: false,
    requestTimeoutMs: TIMEOUT_MS,
    logger,
  });
  servers.push(server);
  const mcp = new Client({ name: 'arazzo-mcp-failures', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
  clients.push(mcp);
  return mcp;
}

interface ToolResult {
  content: { type: string; text: string }[];
  isError?: boolean;
  structuredContent?: unknown;
}

const call = async (mcp: Client, name: string, args: Record<string, unknown>) =>
  (await mcp.callTool({ name, arguments: args })) as ToolResult;

/** A tool error: one text, no structured content, the failure line last. */
function expectToolError(result: ToolResult, first: RegExp, failureLine: string): void {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  expect(result.content).toHaveLength(1);
  const [head, last, ...rest] = result.content[0]!.text.split('\n');
  expect(head).toMatch(first);
  expect(last).toBe(failureLine);
  expect(rest).toEqual([]);
}

const NOT_APPLIED = 'Applied: no — nothing was changed; retrying is safe.';
const search = { filter: 'userName eq "alice"', count: 1 };

beforeAll(async () => {
  idp = await startFaultyApi();
  client = await serve(idp.url, idp.url);
});

// A test that changes the token endpoint's answer does not leave it changed for the next.
afterEach(() => {
  idp.on('POST', '/oauth2/token', TOKEN_GRANTED);
});

afterAll(async () => {
  for (const c of clients) await c.close();
  for (const s of servers) await s.close();
  await idp.close();
});

describe('the identity provider stopped', () => {
  it('makes every tool a tool error: the token request failed, nothing applied', async () => {
    const down = await serve(CLOSED, CLOSED);
    for (const [name, args, step] of [
      ['delete_user', { userId: 'u1' }, 'delete'],
      ['create_user', { user: '{"userName":"bob"}' }, 'create'],
      ['search_users', search, 'search'],
    ] as const) {
      expectToolError(
        await call(down, name, args),
        new RegExp(
          `^Workflow Error: step "${step}": token request for security scheme "OAuth2" of source "scim" \\(${CLOSED}/oauth2/token\\) failed: POST ${CLOSED}/oauth2/token: connection refused$`,
        ),
        `Failure: token. ${NOT_APPLIED}`,
      );
    }
  });
});

describe('the identity provider failing', () => {
  it('refusing or failing the token request: a token failure, not applied', async () => {
    for (const [fault, cause] of [
      [{ answer: 401, body: '{"error":"invalid_client"}' }, 'HTTP 401 invalid_client'],
      [{ answer: 500, body: 'internal error', type: 'text/plain' }, 'HTTP 500: internal error'],
      [{ answer: 200, body: '<html>' }, 'the answer is not JSON'],
    ] as const) {
      idp.on('POST', '/oauth2/token', fault);
      expectToolError(
        await call(client, 'delete_user', { userId: 'u1' }),
        new RegExp(`^Workflow Error: step "delete": token request .* failed: ${cause}$`),
        `Failure: token. ${NOT_APPLIED}`,
      );
    }
  });

  it('hanging past the timeout after a create was sent: applied unknown — check before retrying', async () => {
    idp.on('POST', '/scim2/Users', 'hang');
    expectToolError(
      await call(client, 'create_user', { user: '{"userName":"bob"}' }),
      new RegExp(
        `^Workflow Error: step "create": POST ${idp.url}/scim2/Users: timed out after ${TIMEOUT_MS} ms$`,
      ),
      'Failure: timeout. Applied: unknown — check before retrying.',
    );
  });

  it('dropping the connection of a delete after it was sent: unknown, and retrying is safe', async () => {
    idp.on('DELETE', '/scim2/Users/u1', 'reset');
    expectToolError(
      await call(client, 'delete_user', { userId: 'u1' }),
      /^Workflow Error: step "delete": DELETE .*\/scim2\/Users\/u1: /,
      'Failure: connection. Applied: unknown — the request may have been carried out; it is idempotent, so retrying is safe.',
    );
  });

  it('answering 500: a server error naming the answer', async () => {
    idp.on('POST', '/scim2/Users', {
      answer: 500,
      type: 'application/scim+json',
      body: JSON.stringify({ detail: 'database unavailable', status: '500' }),
    });
    expectToolError(
      await call(client, 'create_user', { user: '{"userName":"bob"}' }),
      new RegExp(
        `^Workflow Error: step "create": POST ${idp.url}/scim2/Users: the server answered HTTP 500: database unavailable$`,
      ),
      'Failure: server-error. Applied: unknown — check before retrying.',
    );
  });

  it('answering unparsable JSON: a bad response', async () => {
    idp.on('GET', '/scim2/Users', {
      answer: 200,
      body: '{"Resources": [',
      type: 'application/json',
    });
    expectToolError(
      await call(client, 'search_users', search),
      /^Workflow Error: step "search": GET .*\/scim2\/Users: the HTTP 200 answer is not valid JSON \(application\/json\)$/,
      `Failure: bad-response. ${NOT_APPLIED}`,
    );
  });

  it('answering a 4xx SCIM error: still the spec shape, isError false with error and errorStatus', async () => {
    idp.on('GET', '/scim2/Users', {
      answer: 400,
      type: 'application/scim+json',
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
        detail: 'Invalid filter',
        status: '400',
      }),
    });
    expect(await call(client, 'search_users', search)).toEqual({
      content: [
        {
          type: 'text',
          text: "Workflow Success. Outputs: {'users': None, 'error': 'Invalid filter', 'errorStatus': '400'}",
        },
      ],
      structuredContent: { users: null, error: 'Invalid filter', errorStatus: '400' },
      isError: false,
    });
  });
});
