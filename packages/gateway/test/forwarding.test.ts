import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { rawHttpStatus, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FILTERING_POLICIES,
  type GatewayFixture,
  proxyDefinition,
  startTestGateway,
} from './fixtures/gateway.js';
import { type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { MCP_POST_HEADERS, rawRequest, toolCall } from './fixtures/mcp-client.js';
import { type RawUpstream, startRawUpstream } from './fixtures/raw-upstream.js';

const tempDir = useTempDir('gw-forwarding-');

/** Polls until `condition` holds, failing after a bounded deadline. */
async function until(condition: () => boolean, what: string, deadlineMs = 5000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const BIG = Buffer.alloc(8 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789');
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('upstream forwarding', () => {
  let upstream: RawUpstream;
  let fx: GatewayFixture;
  let holdReceived = 0;
  let upstreamClosed = 0;

  beforeAll(async () => {
    upstream = await startRawUpstream((path, _body, res) => {
      if (path === '/hold') {
        // Never answers: only the gateway cancelling the request ends it.
        holdReceived++;
        res.on('close', () => upstreamClosed++);
        return;
      }
      if (path === '/big') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': BIG.length });
        res.end(BIG);
        return;
      }
      // Chunked, no content-length, in three separate writes.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"jsonrpc":"2.0",');
      setTimeout(() => {
        res.write('"id":1,');
        setTimeout(() => res.end('"result":{}}'), 20);
      }, 20);
    });
    fx = await startTestGateway({ dataDir: tempDir() });
    for (const [name, context, path] of [
      ['hold-v1.0', '/hold', '/hold'],
      ['big-v1.0', '/big', '/big'],
      ['chunked-v1.0', '/chunked', '/chunked'],
    ] as const) {
      const definition = proxyDefinition(name, context, `${upstream.url}${path}`);
      expect((await fx.deploy(definition)).status).toBe(201);
    }
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await upstream?.close();
  });

  /** POSTs a tools/call and resolves with the status and the body, read as slowly as asked. */
  function post(path: string, readDelayMs = 0): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(`${fx.gateway.plainUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          if (readDelayMs > 0) {
            res.pause();
            setTimeout(() => res.resume(), readDelayMs);
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.end(JSON.stringify(toolCall('search_users')));
    });
  }

  it('cancels the upstream request when the client goes away before the answer', async () => {
    const [received, closed] = [holdReceived, upstreamClosed];
    const req = request(`${fx.gateway.plainUrl}/hold/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify(toolCall('search_users')));
    await until(() => holdReceived > received, 'the upstream to receive the request');
    req.destroy();
    await until(() => upstreamClosed > closed, 'the upstream request to be cancelled');
  });

  it('streams an answer larger than the socket buffers to a slow reader, byte for byte', async () => {
    const { status, body } = await post('/big/mcp', 1);
    expect(status).toBe(200);
    expect(body.length).toBe(BIG.length);
    expect(sha256(body)).toBe(sha256(BIG));
  });

  it('passes a chunked answer written in several pieces through whole', async () => {
    const { status, body } = await post('/chunked/mcp');
    expect(status).toBe(200);
    expect(JSON.parse(body.toString('utf8'))).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });
});

const ANSWER = JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} });
const LIST = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  result: { tools: [{ name: 'search_users' }] },
});
const UPSTREAM_SECRET = 'fwd-secret-3b8e51';

/** Headers each upstream path answers with, besides a JSON body and its content-length. */
const ANSWER_HEADERS: Record<string, Record<string, string | string[]>> = {
  '/plain': {},
  '/internal': { 'x-internal': '1' },
  // Two Connection fields: undici may hand them over as a list.
  '/nominated': { connection: ['X-Internal', ' x-other '], 'x-internal': '1', 'x-other': '2' },
  '/nominated-length': { connection: 'Content-Length, x-internal', 'x-internal': '1' },
  '/list': { connection: 'x-internal', 'x-internal': '1' },
};

/**
 * Sends one POST with these header lines exactly as written, on its own connection and in this
 * version of HTTP/1, and resolves with the status: Node's client refuses some hop-by-hop headers
 * (a `trailer` without chunking) and speaks only HTTP/1.1.
 */
function postRaw(url: string, headerLines: string[], body: string, version = '1.1') {
  const { host, pathname } = new URL(url);
  const head = [
    `POST ${pathname} HTTP/${version}`,
    `host: ${host}`,
    'connection: close',
    'content-type: application/json',
    'accept: application/json, text/event-stream',
    `content-length: ${Buffer.byteLength(body)}`,
    ...headerLines,
  ];
  return rawHttpStatus(url, `${head.join('\r\n')}\r\n\r\n${body}`);
}

describe('hop-by-hop headers (RFC 9110 §7.6.1) and Via (§7.6.3)', () => {
  let upstream: RawUpstream;
  let km: KeyManager;
  let fx: GatewayFixture;

  beforeAll(async () => {
    process.env.GW_TEST_FORWARDING_SECRET = UPSTREAM_SECRET;
    upstream = await startRawUpstream((path, _body, res) => {
      const body = path === '/list' ? LIST : ANSWER;
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...ANSWER_HEADERS[path],
      });
      res.end(body);
    });
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    for (const path of ['/plain', '/internal', '/nominated', '/nominated-length']) {
      const name = `hop-${path.slice(1)}`;
      const definition = proxyDefinition(`${name}-v1.0`, `/${name}`, `${upstream.url}${path}`);
      expect((await fx.deploy(definition)).status).toBe(201);
    }
    const withAuth = proxyDefinition('hop-auth-v1.0', '/hop-auth', `${upstream.url}/plain`);
    (withAuth.spec as { upstream: Record<string, unknown> }).upstream.auth = {
      header: 'X-Gateway-Auth',
      secretRef: 'env:GW_TEST_FORWARDING_SECRET',
    };
    expect((await fx.deploy(withAuth)).status).toBe(201);
    const filtering = proxyDefinition(
      'hop-list-v1.0',
      '/hop-list',
      `${upstream.url}/list`,
      FILTERING_POLICIES,
    );
    expect((await fx.deploy(filtering)).status).toBe(201);
  });
  afterAll(async () => {
    delete process.env.GW_TEST_FORWARDING_SECRET;
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  /** POSTs a tools/call to `context` on its own connection, with exactly these extra headers. */
  const send = (context: string, headers: Record<string, string>) =>
    rawRequest(
      `${fx.gateway.plainUrl}${context}/mcp`,
      'POST',
      { ...MCP_POST_HEADERS, ...headers },
      JSON.stringify(toolCall('search_users')),
    );

  /** POSTs a tools/list to the filtering proxy, with a token and these extra headers. */
  const listTools = async (headers: Record<string, string>) =>
    rawRequest(
      `${fx.gateway.plainUrl}/hop-list/mcp`,
      'POST',
      {
        ...MCP_POST_HEADERS,
        authorization: `Bearer ${await km.sign({ scope: 'internal_user_mgt_list' })}`,
        ...headers,
      },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );

  it('does not forward the fixed hop-by-hop headers upstream, but does forward the others', async () => {
    const fixed = ['keep-alive', 'te', 'trailer', 'proxy-authorization', 'proxy-connection'];
    const status = await postRaw(
      `${fx.gateway.plainUrl}/hop-plain/mcp`,
      [
        'Keep-Alive: timeout=5',
        'TE: trailers',
        'Trailer: x-checksum',
        'Proxy-Authorization: Basic cHJveHk6c2VjcmV0',
        'Proxy-Connection: keep-alive',
        'X-Trace: 1',
      ],
      JSON.stringify(toolCall('search_users')),
    );
    expect(status).toBe(200);
    const received = upstream.lastHeaders ?? {};
    for (const name of fixed) expect(received[name], name).toBeUndefined();
    expect(received['x-trace']).toBe('1');
  });

  it('does not forward upstream a header the client nominates in Connection', async () => {
    await send('/hop-plain', { 'x-hop': 'secret', 'x-trace': '1' });
    expect(upstream.lastHeaders?.['x-hop']).toBe('secret');

    const response = await send('/hop-plain', {
      connection: 'keep-alive, X-Hop',
      'x-hop': 'secret',
      'x-trace': '1',
    });
    expect(response.status).toBe(200);
    expect(upstream.lastHeaders?.['x-hop']).toBeUndefined();
    expect(upstream.lastHeaders?.['x-trace']).toBe('1');
    expect(upstream.lastHeaders?.connection ?? '').not.toMatch(/x-hop/i);

    // Connection options are case-insensitive tokens with optional whitespace around the commas.
    await send('/hop-plain', {
      connection: 'close ,X-HOP,\tx-Other ',
      'x-hop': 'secret',
      'x-other': '2',
      'x-trace': '1',
    });
    expect(upstream.lastHeaders?.['x-hop']).toBeUndefined();
    expect(upstream.lastHeaders?.['x-other']).toBeUndefined();
    expect(upstream.lastHeaders?.['x-trace']).toBe('1');
  });

  it('does not forward to the client a header the upstream nominates in Connection', async () => {
    const control = await send('/hop-internal', {});
    expect(control.headers['x-internal']).toBe('1');

    for (const context of ['/hop-nominated', '/hop-nominated-length']) {
      const response = await send(context, {});
      expect(response.status, context).toBe(200);
      expect(response.headers['x-internal'], context).toBeUndefined();
      expect(response.headers['x-other'], context).toBeUndefined();
      expect(String(response.headers.connection), context).not.toMatch(/internal|other|length/i);
      // The framing stays the upstream's, even when it nominates content-length.
      expect(response.headers['content-length'], context).toBe(String(Buffer.byteLength(ANSWER)));
      expect(response.headers['transfer-encoding'], context).toBeUndefined();
      expect(JSON.parse(response.body), context).toEqual(JSON.parse(ANSWER));
    }

    // The filtering path (a list read, filtered and written back) drops them too.
    const list = await listTools({});
    expect(list.status).toBe(200);
    expect(list.headers['x-internal']).toBeUndefined();
    expect(list.headers['content-length']).toBe(String(Buffer.byteLength(list.body)));
    expect(JSON.parse(list.body).result.tools).toEqual([{ name: 'search_users' }]);
  });

  it('still sends the headers the gateway sets when the client nominates them', async () => {
    const auth = await send('/hop-auth', {
      connection: 'close, X-Gateway-Auth',
      'x-gateway-auth': 'forged',
    });
    expect(auth.status).toBe(200);
    expect(upstream.lastHeaders?.['x-gateway-auth']).toBe(UPSTREAM_SECRET);

    const list = await listTools({
      connection: 'close, Accept-Encoding',
      'accept-encoding': 'gzip',
    });
    expect(list.status).toBe(200);
    expect(upstream.lastHeaders?.['accept-encoding']).toBe('identity');
  });

  it('adds its own Via member to every request it forwards, after those the request carries', async () => {
    await send('/hop-plain', {});
    expect(upstream.lastHeaders?.via).toBe('1.1 mcp-gateway');

    await send('/hop-plain', { via: '1.0 fred, 1.1 p.example.net' });
    expect(upstream.lastHeaders?.via).toBe('1.0 fred, 1.1 p.example.net, 1.1 mcp-gateway');

    // Repeated Via lines are one list, in the order received.
    const lines = ['Via: 1.0 fred', 'Via: 1.1 p.example.net'];
    const call = JSON.stringify(toolCall('search_users'));
    expect(await postRaw(`${fx.gateway.plainUrl}/hop-plain/mcp`, lines, call)).toBe(200);
    expect(upstream.lastHeaders?.via).toBe('1.0 fred, 1.1 p.example.net, 1.1 mcp-gateway');

    // The list-filtering path forwards through the same headers.
    expect((await listTools({ via: '1.1 edge' })).status).toBe(200);
    expect(upstream.lastHeaders?.via).toBe('1.1 edge, 1.1 mcp-gateway');
  });

  it('names the version of HTTP the request came in with in its Via member', async () => {
    const call = JSON.stringify(toolCall('search_users'));
    const status = await postRaw(`${fx.gateway.plainUrl}/hop-plain/mcp`, [], call, '1.0');
    expect(status).toBe(200);
    expect(upstream.lastHeaders?.via).toBe('1.0 mcp-gateway');
  });

  it('still adds its Via member when the client nominates Via as hop-by-hop', async () => {
    const response = await send('/hop-plain', { connection: 'close, Via', via: '1.1 hidden' });
    expect(response.status).toBe(200);
    expect(upstream.lastHeaders?.via).toBe('1.1 mcp-gateway');
  });
});
