import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@mcp-identity/common/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedBin } from '../../../packages/arazzo-mcp/test/support/serve-bin.js';
import {
  type ScimHarness,
  seedUser,
  spawnPackServer,
  startScimHarness,
} from './support/harness.js';

const HEADER = 'X-Gateway-Auth';
const SECRET = 'upstream-secret-4c1d8f0e9a7b6c5d';
const tempDir = useTempDir('scim-required-header-');

let h: ScimHarness;
let served: ServedBin;
let url: string;

/** `arazzo-mcp serve --require-header … --require-header-file …`, as the stack starts it. */
function startGuardedServer(): Promise<ServedBin> {
  const secretFile = join(tempDir(), 'upstream-secret');
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  return spawnPackServer(h, ['--require-header', HEADER, '--require-header-file', secretFile]);
}

function postMcp(message: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...headers,
    },
    body: JSON.stringify(message),
  });
}

const deleteUserCall = (userId: string, headers: Record<string, string>) =>
  postMcp(
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'delete_user', arguments: { userId } },
    },
    headers,
  );

beforeAll(async () => {
  h = await startScimHarness();
  served = await startGuardedServer();
  url = served.url;
}, 60_000);

afterAll(() => served?.stop());

describe('serve --require-header: the SCIM MCP server answers only its gateway', () => {
  it('refuses a direct delete_user without the header with 401, and the user still exists', async () => {
    const victim = await seedUser(h, 'header-victim');
    const attempts: Record<string, string>[] = [
      {},
      { [HEADER]: 'wrong' },
      { [HEADER]: `${SECRET}x` },
      { [HEADER]: '' },
    ];
    for (const headers of attempts) {
      const response = await deleteUserCall(victim, headers);
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32001,
          message: `Unauthorized: this server answers only requests with a valid ${HEADER} header`,
        },
      });
    }
    expect((await h.scim('GET', `/Users/${victim}`)).status).toBe(200);
  });

  it('refuses tools/list and the other methods of /mcp too, while health stays open', async () => {
    const list = await postMcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(list.status).toBe(401);
    expect((await fetch(`${url}/mcp`)).status).toBe(401);
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it('runs delete_user for a caller with the header (the gateway path)', async () => {
    const victim = await seedUser(h, 'header-deleted');
    const client = new Client({ name: 'gateway-stand-in', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { [HEADER]: SECRET } },
      }),
    );
    const result = await client.callTool({ name: 'delete_user', arguments: { userId: victim } });
    await client.close();
    expect(result.structuredContent).toEqual({ statusCode: 204, error: null, errorStatus: null });
    expect((await h.scim('GET', `/Users/${victim}`)).status).toBe(404);
  });
});
