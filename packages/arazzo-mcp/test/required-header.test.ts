import { createArazzoMcpApp, createToolCatalog } from '@mcp-identity/arazzo-mcp';
import { createLogger } from '@mcp-identity/common';
import { startTestServer } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { GET_USER_WORKFLOWS } from './support/get-user-workflow.js';

const SECRET = 'gateway-credential-0123456789';
let baseUrl: string;

beforeAll(async () => {
  const runner = { run: async () => ({ kind: 'completed' as const, outputs: { user: null } }) };
  const app = createArazzoMcpApp({
    catalog: createToolCatalog(GET_USER_WORKFLOWS, runner),
    logger: createLogger({ level: 'silent', pretty: false }),
    requiredHeader: { name: 'X-Gateway-Auth', value: SECRET },
  });
  baseUrl = (await startTestServer(app)).url;
});

async function ping(credential: string | string[] | undefined) {
  const headers = new Headers({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  });
  for (const value of credential === undefined ? [] : [credential].flat()) {
    headers.append('x-gateway-auth', value);
  }
  const response = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  return { status: response.status, body: (await response.json()) as { error?: { code: number } } };
}

describe('--require-header on /mcp', () => {
  it('serves a request carrying the exact credential', async () => {
    expect(await ping(SECRET)).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', id: 1, result: {} },
    });
  });

  it('refuses a missing, wrong, truncated, extended or repeated credential with 401', async () => {
    for (const credential of [
      undefined,
      'wrong',
      SECRET.slice(0, -1),
      `${SECRET}x`,
      '',
      [SECRET, SECRET],
    ]) {
      const answer = await ping(credential);
      expect(answer.status).toBe(401);
      expect(answer.body.error?.code).toBe(-32001);
    }
  });

  it('leaves /health open', async () => {
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
  });
});
