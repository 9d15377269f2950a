import { fileURLToPath } from 'node:url';
import { startArazzoMcpHttp } from '@mcp-identity/arazzo-mcp';
import { createLogger, type RunningServer } from '@mcp-identity/common';
import { useTempDir } from '@mcp-identity/common/testing';
import { KNOWN_SCOPES, type RunningIdp, startIdp } from '@mcp-identity/idp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll } from 'vitest';
import {
  type ServedBin,
  spawnServe,
} from '../../../../packages/arazzo-mcp/test/support/serve-bin.js';
import { type RecordingProxy, startRecordingProxy } from './recording-proxy.js';

export const ARAZZO_FILE = fileURLToPath(new URL('../../scim.arazzo.yaml', import.meta.url));
export const SCIM_JSON = 'application/scim+json';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const CUSTOM = 'urn:scim:schemas:extension:custom:User';

/** The MCP server's backend application (its client credentials): authorized on every scope. */
export const BACKEND = { clientId: 'scim-backend', clientSecret: 'backend-secret-0123456789' };
/** A backend application holding only the read scopes: the IdP refuses its writes with 403. */
export const READ_ONLY = {
  clientId: 'scim-read-only',
  clientSecret: 'read-only-secret-0123456789',
};
/** A backend application authorized on no scope at all: the IdP refuses every call. */
export const NO_SCOPES = {
  clientId: 'scim-no-scopes',
  clientSecret: 'no-scopes-secret-0123456789',
};
/** Used by the tests themselves to read the IdP back, straight to the IdP (not recorded). */
const ADMIN = { clientId: 'test-admin', clientSecret: 'admin-secret-0123456789' };

export const READ_SCOPES = [
  'internal_user_mgt_list',
  'internal_user_mgt_view',
  'internal_group_mgt_view',
  'internal_role_mgt_view',
  'internal_agent_mgt_list',
  'internal_agent_mgt_view',
];

export type ToolResult = {
  text: string;
  isError: boolean;
  /** The workflow outputs as JSON (the MCP `structuredContent`). */
  outputs: Record<string, unknown>;
};

export type ScimResponse = { status: number; body: Record<string, unknown> };

export type McpConnection = {
  client: Client;
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
};

export type ScimHarness = McpConnection & {
  idp: RunningIdp;
  /** Between the MCP server and the IdP: records token and API requests. */
  proxy: RecordingProxy;
  /** An admin SCIM call made directly to the IdP (not recorded), for reading it back. */
  scim(method: string, path: string, body?: unknown): Promise<ScimResponse>;
  /** Another MCP server on the same IdP (through the same proxy) using other credentials. */
  connectAs(credentials: { clientId: string; clientSecret: string }): Promise<McpConnection>;
};

const logger = createLogger({ level: 'silent', pretty: false });

function envFor(credentials: { clientId: string; clientSecret: string }) {
  return {
    SCIM_OAUTH2_CLIENT_ID: credentials.clientId,
    SCIM_OAUTH2_CLIENT_SECRET: credentials.clientSecret,
    AI_OAUTH2_CLIENT_ID: credentials.clientId,
    AI_OAUTH2_CLIENT_SECRET: credentials.clientSecret,
  };
}

function toToolResult(raw: unknown): ToolResult {
  const result = raw as {
    content: { type: string; text?: string }[];
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
  };
  const first = result.content[0];
  if (result.content.length !== 1 || first?.type !== 'text' || first.text === undefined) {
    throw new Error(`expected exactly one text content item, got ${JSON.stringify(raw)}`);
  }
  return {
    text: first.text,
    isError: result.isError ?? false,
    outputs: result.structuredContent ?? {},
  };
}

export type HarnessOptions = {
  /**
   * arazzo-mcp's `--token-cache`. Off (arazzo-mcp's default: a new token for every tool call) unless a file only tests
   * what the tools do: the IdP verifies the client secret with scrypt on every token request,
   * which dominates a tool call's time on a loaded machine. Token behaviour itself is tested
   * with the default in shape-and-tokens.test.ts.
   */
  tokenCache?: boolean;
};

/**
 * One embedded IdP (plain HTTP on 127.0.0.1:0, fresh data dir, default custom attributes), a
 * recording proxy in front of it and the SCIM tool pack served by arazzo-mcp with the backend
 * application's credentials, reached with the official MCP SDK client. Closed after the file.
 */
export async function startScimHarness(options: HarnessOptions = {}): Promise<ScimHarness> {
  const tempDir = useTempDir('scim-pack-');
  const servers: RunningServer[] = [];
  const clients: Client[] = [];
  let proxy: RecordingProxy | undefined;
  let idp: RunningIdp | undefined;
  afterAll(async () => {
    for (const client of clients) await client.close();
    for (const server of servers) await server.close();
    await proxy?.close();
    await idp?.close();
  });

  idp = await startIdp({
    dataDir: tempDir(),
    http: true,
    port: 0,
    logger,
    bootstrap: {
      customAttributes: [
        { name: 'customerTier', type: 'string' },
        { name: 'contractEndDate', type: 'string' },
      ],
      applications: [
        { name: 'scim-backend', ...BACKEND, scopes: '*' },
        { name: 'scim-read-only', ...READ_ONLY, scopes: READ_SCOPES },
        { name: 'scim-no-scopes', ...NO_SCOPES, scopes: [] },
        { name: 'test-admin', ...ADMIN, scopes: '*' },
      ],
    },
  });
  const idpUrl = idp.url;
  const recording = await startRecordingProxy(idpUrl);
  proxy = recording;

  const tokenResponse = await fetch(`${idpUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${ADMIN.clientId}:${ADMIN.clientSecret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: KNOWN_SCOPES.join(' ') }),
  });
  if (tokenResponse.status !== 200) throw new Error(`admin token: ${tokenResponse.status}`);
  const adminToken = ((await tokenResponse.json()) as { access_token: string }).access_token;

  const scim = async (method: string, path: string, body?: unknown): Promise<ScimResponse> => {
    const response = await fetch(`${idpUrl}/scim2${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { 'content-type': SCIM_JSON }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {} };
  };

  const connectAs = async (credentials: {
    clientId: string;
    clientSecret: string;
  }): Promise<McpConnection> => {
    const server = await startArazzoMcpHttp({
      arazzo: ARAZZO_FILE,
      sourceServers: { scim2: `${recording.url}/scim2`, agents: `${recording.url}/scim2` },
      env: envFor(credentials),
      tokenCache: options.tokenCache ?? false,
      port: 0,
      handleSignals: false,
      logger,
    });
    servers.push(server);
    const client = new Client({ name: 'scim-pack-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    clients.push(client);
    return {
      client,
      call: async (name, args) => toToolResult(await client.callTool({ name, arguments: args })),
    };
  };

  const backend = await connectAs(BACKEND);
  return { ...backend, idp, proxy: recording, scim, connectAs };
}

/** A SCIM user body for seeding the IdP directly. */
export function userBody(userName: string, extra: Record<string, unknown> = {}) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName,
    password: 'Passw0rd!x',
    name: { givenName: 'Given', familyName: 'Family' },
    emails: [{ value: `${userName}@example.com`, primary: true }],
    ...extra,
  };
}

/** Creates a user straight in the IdP and returns its id. */
export async function seedUser(harness: ScimHarness, userName: string): Promise<string> {
  const created = await harness.scim('POST', '/Users', userBody(userName));
  if (created.status !== 201) throw new Error(`seed user ${userName}: ${created.status}`);
  return created.body.id as string;
}

/** The IdP's 403 detail when the token lacks the operation's scope. */
export const NOT_PERMITTED =
  'Operation is not permitted. You do not have permissions to make this request.';

/** `Workflow Success. Outputs: {...}`, the reference's text for a completed workflow. */
export const SUCCESS_PREFIX = 'Workflow Success. Outputs: ';

/**
 * The pack served by the real `arazzo-mcp serve` process, straight against the harness's IdP
 * with the backend application's credentials; `args` are further serve options.
 */
export function spawnPackServer(harness: ScimHarness, args: string[] = []): Promise<ServedBin> {
  const idp = harness.idp.url;
  return spawnServe(
    [
      '--arazzo',
      ARAZZO_FILE,
      '--source-server',
      `scim2=${idp}/scim2`,
      '--source-server',
      `agents=${idp}/scim2`,
      '--port',
      '0',
      ...args,
    ],
    envFor(BACKEND),
  );
}
