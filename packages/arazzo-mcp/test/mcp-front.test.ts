import { request as httpRequest } from 'node:http';
import { createArazzoMcpApp, createToolCatalog } from '@mcp-identity/arazzo-mcp';
import { lineLogger, startTestServer } from '@mcp-identity/common/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ECHO_USER_RUNNER,
  GET_USER_WORKFLOWS,
  getUser,
  MCP_POST_HEADERS,
} from './support/get-user-workflow.js';

// Without an authentication layer, POST /mcp is served before Fastify (createMcpFront). These
// tests hold it to the answers of the Fastify route, which an app with a guard still uses.

const SECRET = 'gateway-credential-0123456789';
const INSPECTOR = 'https://inspector.example.com';

interface LogLine {
  msg?: string;
  req?: { url?: string };
}

async function startApp(lines: LogLine[], guarded: boolean): Promise<string> {
  const app = createArazzoMcpApp({
    catalog: createToolCatalog(GET_USER_WORKFLOWS, ECHO_USER_RUNNER),
    logger: lineLogger((line) => lines.push(line as LogLine)),
    requiredHeader: { name: 'X-Gateway-Auth', value: SECRET },
    allowedOrigins: [INSPECTOR],
    // A guard that lets everything through keeps every /mcp request on the Fastify route.
    ...(guarded ? { mcpGuard: async () => {} } : {}),
  });
  return (await startTestServer(app)).url;
}

interface Sent {
  method?: string;
  /** Default `/mcp`. */
  path?: string;
  headers?: Record<string, string | undefined>;
  /** Written in pieces (each its own write), so the server may read it in several chunks. */
  body?: string | Buffer | Buffer[];
  chunked?: boolean;
}

const ANSWER_HEADERS = [
  'content-type',
  'content-length',
  'vary',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'allow',
];

/** What a client sees of an answer: status, the headers that carry meaning, and the body. */
function send(baseUrl: string, sent: Sent) {
  const headers = Object.fromEntries(
    Object.entries({ ...MCP_POST_HEADERS, 'x-gateway-auth': SECRET, ...sent.headers }).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  const pieces = [sent.body ?? ''].flat();
  const length = pieces.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0);
  if (!sent.chunked) headers['content-length'] ??= String(length);
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const request = httpRequest(
        `${baseUrl}${sent.path ?? '/mcp'}`,
        { method: sent.method ?? 'POST', headers },
        (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => {
            body += chunk;
          });
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: Object.fromEntries(
                ANSWER_HEADERS.map((name) => [name, response.headers[name]]),
              ),
              body,
            }),
          );
        },
      );
      request.on('error', reject);
      for (const piece of pieces.slice(0, -1)) request.write(piece);
      request.end(pieces.at(-1));
    },
  );
}

const call = (id: number, userId: string) => JSON.stringify(getUser(id, userId));

const CASES: Record<string, Sent> = {
  'a tool call': { body: call(1, 'u1') },
  'a batch': { body: JSON.stringify([getUser(1, 'a'), getUser(2, 'b')]) },
  'a notification': {
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  },
  'JSON with a charset': {
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: call(3, 'u3'),
  },
  'a body in pieces': {
    body: [Buffer.from('{"jsonrpc":"2.0","id":4,'), Buffer.from(call(4, 'x').slice(24))],
  },
  'malformed JSON': { body: '{"jsonrpc":' },
  'an empty body': { body: '' },
  'not a JSON-RPC message': { body: '{"foo":1}' },
  'an unsupported protocol version': {
    headers: { 'mcp-protocol-version': '1999-01-01' },
    body: call(5, 'u5'),
  },
  'a client that does not accept event streams': {
    headers: { accept: 'application/json' },
    body: call(6, 'u6'),
  },
  'another media type': { headers: { 'content-type': 'text/plain' }, body: call(7, 'u7') },
  'a malformed media type': {
    headers: { 'content-type': 'application/json, text/plain' },
    body: call(8, 'u8'),
  },
  'no media type': { headers: { 'content-type': undefined }, body: call(9, 'u9') },
  'an allowed browser origin': { headers: { origin: INSPECTOR }, body: call(10, 'u10') },
  'a loopback origin': { headers: { origin: 'http://localhost:6274' }, body: call(11, 'u11') },
  'a foreign origin': { headers: { origin: 'http://evil.example.com' }, body: call(12, 'u12') },
  'no gateway credential': { headers: { 'x-gateway-auth': undefined }, body: call(13, 'u13') },
  'a wrong gateway credential': { headers: { 'x-gateway-auth': 'wrong' }, body: call(14, 'u') },
  'a body over the limit': {
    body: JSON.stringify({ ...getUser(15, 'u'), pad: 'x'.repeat(1_100_000) }),
  },
  'a chunked body': { chunked: true, body: call(16, 'u16') },
  'a query string': { path: '/mcp?session=1', body: call(17, 'u17') },
  'another path': { path: '/mcp/', body: call(18, 'u18') },
  GET: { method: 'GET' },
};

describe('POST /mcp served before Fastify', () => {
  const frontLog: LogLine[] = [];
  const fastifyLog: LogLine[] = [];
  let front: string;
  let fastify: string;

  beforeAll(async () => {
    front = await startApp(frontLog, false);
    fastify = await startApp(fastifyLog, true);
  });

  it.each(Object.keys(CASES))('answers %s exactly as the Fastify route', async (name) => {
    const sent = CASES[name] as Sent;
    const [fromFront, fromFastify] = [await send(front, sent), await send(fastify, sent)];
    expect(fromFront).toEqual(fromFastify);
  });

  it('keeps characters split across body chunks', async () => {
    const text = JSON.stringify(getUser(20, 'zoë-😀'));
    const bytes = Buffer.from(text);
    const split = bytes.indexOf(Buffer.from('😀')) + 2;
    const answer = await send(front, { body: [bytes.subarray(0, split), bytes.subarray(split)] });
    expect(JSON.parse(answer.body)).toMatchObject({
      id: 20,
      result: { structuredContent: { user: { id: 'zoë-😀' } } },
    });
  });

  it('serves the calls it takes without Fastify, and leaves refusals to Fastify', async () => {
    const incoming = () => frontLog.filter((line) => line.msg === 'incoming request').length;
    const before = incoming();
    expect((await send(front, CASES['a tool call'] as Sent)).status).toBe(200);
    expect(incoming()).toBe(before);
    expect((await send(front, CASES['a foreign origin'] as Sent)).status).toBe(403);
    expect(incoming()).toBe(before + 1);
  });
});
