import { createArazzoMcpApp, createToolCatalog } from '@mcp-identity/arazzo-mcp';
import { createLogger } from '@mcp-identity/common';
import { startTestServer } from '@mcp-identity/common/testing';
import {
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ECHO_USER_RUNNER,
  GET_USER_WORKFLOWS,
  getUser,
  MCP_POST_HEADERS,
} from './support/get-user-workflow.js';

// What a stateless Streamable HTTP server answering in JSON owes every POST (the MCP transport
// specification), with the statuses, codes and messages the MCP SDK's own transport gives.

let baseUrl: string;

beforeAll(async () => {
  const app = createArazzoMcpApp({
    catalog: createToolCatalog(GET_USER_WORKFLOWS, ECHO_USER_RUNNER),
    logger: createLogger({ level: 'silent', pretty: false }),
  });
  baseUrl = (await startTestServer(app)).url;
});

const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 't', version: '1' },
  },
};

async function post(body: unknown, headers: Record<string, string | undefined> = {}) {
  const sent = Object.entries({ ...MCP_POST_HEADERS, ...headers }).filter(
    (entry): entry is [string, string] => entry[1] !== undefined,
  );
  const response = await fetch(`${baseUrl}/mcp`, {
    method: 'POST',
    headers: sent,
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: text === '' ? undefined : (JSON.parse(text) as unknown),
  };
}

const refusal = (status: number, code: number, message: string) => ({
  status,
  contentType: 'application/json',
  body: { jsonrpc: '2.0', error: { code, message }, id: null },
});

const answer = (id: number | string, userId: string) => ({
  jsonrpc: '2.0',
  id,
  result: expect.objectContaining({ structuredContent: { user: { id: userId } } }),
});

describe('POST /mcp, stateless with JSON answers', () => {
  it('refuses a client that does not accept both JSON and an event stream with 406', async () => {
    const message =
      'Not Acceptable: Client must accept both application/json and text/event-stream';
    for (const accept of [undefined, 'application/json', '*/*']) {
      expect(await post(getUser(1, 'u'), { accept })).toEqual(refusal(406, -32000, message));
    }
  });

  it('refuses a body whose media type is not application/json with 415', async () => {
    const message = 'Unsupported Media Type: Content-Type must be application/json';
    for (const contentType of ['text/plain', 'text/plain; a=application/json']) {
      expect(await post(getUser(1, 'u'), { 'content-type': contentType })).toEqual(
        refusal(415, -32000, message),
      );
    }
  });

  it('accepts application/json with parameters or in any case', async () => {
    for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
      const sent = await post(getUser(1, 'u'), { 'content-type': contentType });
      expect(sent).toEqual({ status: 200, contentType: 'application/json', body: answer(1, 'u') });
    }
  });

  it('refuses an unsupported MCP-Protocol-Version with 400 and accepts a missing one', async () => {
    const versions = SUPPORTED_PROTOCOL_VERSIONS.join(', ');
    expect(await post(getUser(1, 'u'), { 'mcp-protocol-version': '1999-01-01' })).toEqual(
      refusal(
        400,
        -32000,
        `Bad Request: Unsupported protocol version: 1999-01-01 (supported versions: ${versions})`,
      ),
    );
    const missing = await post(getUser(1, 'u'), { 'mcp-protocol-version': undefined });
    expect(missing.body).toEqual(answer(1, 'u'));
  });

  it('initializes without a protocol version header, alone only', async () => {
    const alone = await post(initialize, { 'mcp-protocol-version': undefined });
    expect(alone.body).toMatchObject({ id: 0, result: { protocolVersion: '2025-06-18' } });
    expect(await post([initialize, getUser(1, 'u')])).toEqual(
      refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed'),
    );
  });

  it('refuses anything that is not a JSON-RPC message, alone or in a batch', async () => {
    const message = 'Parse error: Invalid JSON-RPC message';
    for (const body of [{ foo: 1 }, null, 42, [getUser(1, 'u'), { foo: 1 }]]) {
      expect(await post(body)).toEqual(refusal(400, -32700, message));
    }
  });

  it('accepts and refuses requests exactly as the SDK schema does', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const candidates = [
      ping,
      { ...ping, id: 'a' },
      { ...ping, id: 1.5 },
      { ...ping, id: 2 ** 60 },
      { ...ping, id: null },
      { jsonrpc: '2.0', method: 'ping', params: [] },
      { ...ping, jsonrpc: '1.0' },
      { ...ping, method: 5 },
      { ...ping, params: [] },
      { ...ping, params: null },
      { ...ping, params: {} },
      { ...ping, params: { _meta: { progressToken: 'p' } } },
      { ...ping, params: { _meta: { progressToken: {} } } },
      { ...ping, extra: true },
    ];
    for (const candidate of candidates) {
      const valid = JSONRPCMessageSchema.safeParse(candidate).success;
      const { status } = await post(candidate);
      expect({ candidate, refused: status === 400 }).toEqual({ candidate, refused: !valid });
    }
  });

  it('refuses a batch of more than 100 messages', async () => {
    const batch = Array.from({ length: 101 }, (_, i) => getUser(i, 'u'));
    expect(await post(batch)).toEqual(
      refusal(400, -32600, 'Invalid Request: Batch must not exceed 100 messages'),
    );
  });

  it('answers notifications and responses with 202 and no body', async () => {
    const notification = { jsonrpc: '2.0', method: 'notifications/initialized' };
    for (const body of [notification, { jsonrpc: '2.0', id: 5, result: {} }, []]) {
      expect(await post(body)).toEqual({ status: 202, contentType: null, body: undefined });
    }
  });

  it('answers a batch with an array in request order, a batch of one with the answer alone', async () => {
    const notification = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const two = await post([getUser('b', 'v'), notification, getUser(1, 'u')]);
    expect(two.body).toEqual([answer('b', 'v'), answer(1, 'u')]);
    expect((await post([getUser(1, 'u')])).body).toEqual(answer(1, 'u'));
  });

  it('answers a batch that repeats an id once for that id', async () => {
    expect((await post([getUser(1, 'u'), getUser(1, 'v')])).body).toEqual(answer(1, 'u'));
  });

  it('answers params that do not fit inside a batch next to the good request', async () => {
    const bad = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 5 } };
    expect((await post([getUser(1, 'u'), bad])).body).toEqual([
      answer(1, 'u'),
      {
        jsonrpc: '2.0',
        id: 2,
        error: {
          code: -32602,
          message: 'Invalid params for tools/call: params.name: expected string, received number',
        },
      },
    ]);
  });
});
