import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { toolCall } from './fixtures/mcp-client.js';
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
