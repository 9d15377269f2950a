import { brotliCompressSync, gzipSync } from 'node:zlib';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FILTERING_POLICIES,
  type GatewayFixture,
  proxyDefinition,
  startTestGateway,
} from './fixtures/gateway.js';
import { type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { json, postMcp } from './fixtures/mcp-client.js';
import { type RawUpstream, startRawUpstream } from './fixtures/raw-upstream.js';

const tempDir = useTempDir('gw-resilience-');

const LIST = {
  jsonrpc: '2.0',
  id: 1,
  result: { tools: [{ name: 'search_users' }, { name: 'delete_user' }] },
};
const NOTIFICATION = { jsonrpc: '2.0', method: 'notifications/message', params: { data: 'x' } };

/** What each upstream path answers to tools/list. */
const RESPONSES: Record<string, { headers: Record<string, string>; body: Buffer }> = {
  '/gzip-json': {
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: gzipSync(JSON.stringify(LIST)),
  },
  '/br-json': {
    headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
    body: brotliCompressSync(JSON.stringify(LIST)),
  },
  '/gzip-sse': {
    headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
    body: gzipSync(`event: message\ndata: ${JSON.stringify(LIST)}\n\n`),
  },
  // A blank line may end in LF, CR or CRLF (HTML standard, "Parsing an event stream").
  '/lf-crlf-sse': {
    headers: { 'content-type': 'text/event-stream' },
    body: Buffer.from(
      `event: message\ndata: ${JSON.stringify(NOTIFICATION)}\n\r\n` +
        `event: message\rid: 5\rdata: ${JSON.stringify(LIST)}\r\r`,
    ),
  },
  '/unknown-coding': {
    headers: { 'content-type': 'application/json', 'content-encoding': 'zstd-ish' },
    body: Buffer.from('garbage'),
  },
  '/broken-gzip': {
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: Buffer.from('this is not gzip at all'),
  },
};

describe('a filtering proxy in front of unusual upstreams', () => {
  let upstream: RawUpstream;
  let km: KeyManager;
  let fx: GatewayFixture;

  beforeAll(async () => {
    upstream = await startRawUpstream((path, _body, res) => {
      const answer = RESPONSES[path];
      if (!answer) return res.writeHead(404).end();
      res.writeHead(200, answer.headers).end(answer.body);
    });
    km = await startKeyManager();
    fx = await startTestGateway({ dataDir: tempDir(), keyManager: km });
    for (const path of Object.keys(RESPONSES)) {
      const name = `${path.slice(1)}-v1.0`;
      const definition = proxyDefinition(name, path, `${upstream.url}${path}`, FILTERING_POLICIES);
      expect((await fx.deploy(definition)).status).toBe(201);
    }
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  const listTools = async (context: string) =>
    postMcp(
      `${fx.gateway.plainUrl}${context}/mcp`,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { authorization: `Bearer ${await km.sign({ scope: 'internal_user_mgt_list' })}` },
    );

  const stillServing = async () => {
    const health = await fetch(`${fx.gateway.plainUrl}/_gateway-health/healthy`);
    expect(health.status).toBe(200);
  };

  it.each(['/gzip-json', '/br-json'])(
    'decodes a compressed JSON list (%s), filters it, and stays up',
    async (context) => {
      const response = await listTools(context);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-encoding')).toBeNull();
      const body = await json(response);
      expect(body.result.tools).toEqual([{ name: 'search_users' }]);
      expect(upstream.lastHeaders?.['accept-encoding']).toBe('identity');
      await stillServing();
    },
  );

  it('decodes a gzip-encoded SSE list, filters it, and stays up', async () => {
    const response = await listTools('/gzip-sse');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('"search_users"');
    expect(text).not.toContain('delete_user');
    await stillServing();
  });

  it('parses SSE events ended by LF CRLF and by CR CR, and filters the list among them', async () => {
    const response = await listTools('/lf-crlf-sse');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain('delete_user');
    expect(text).toContain('"search_users"');
    expect(text).toContain('notifications/message');
    expect(text).toContain('id: 5\n');
    await stillServing();
  });

  it('answers 502 for a list in a coding it cannot read, and for a corrupt gzip body', async () => {
    for (const context of ['/unknown-coding', '/broken-gzip']) {
      const response = await listTools(context);
      expect(response.status).toBe(502);
      expect(await json(response)).toMatchObject({ id: 1, error: { code: -32000 } });
    }
    await stillServing();
  });
});
