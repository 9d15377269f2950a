import type { ServerResponse } from 'node:http';
import { request } from 'node:http';
import { connect } from 'node:net';
import { createApp, createLogger, ensureSelfSignedCertificate } from '@mcp-identity/common';
import { startTestServer, useTempDir } from '@mcp-identity/common/testing';
import { Agent, fetch as undiciFetch } from 'undici';
import { describe, expect, it } from 'vitest';

const logger = createLogger({ level: 'silent', pretty: false });
const tempDir = useTempDir();

/** One request on its own connection; the answer's status, headers and body. */
function get(url: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(url, { agent: false }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8');
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    },
  );
}

describe('createApp with a front handler', () => {
  it('serves the requests the front takes, and Fastify every other one, on one listener', async () => {
    const app = createApp({
      logger,
      front: (req, res) => {
        if (req.url !== '/fast') return false;
        res.writeHead(200, { 'content-type': 'text/plain' }).end('front');
        return true;
      },
    });
    app.get('/slow', async () => ({ from: 'fastify' }));
    const server = await startTestServer(app);
    const fast = await get(`${server.url}/fast`);
    expect(fast).toMatchObject({ status: 200, body: 'front' });
    const slow = await get(`${server.url}/slow`);
    expect(slow.status).toBe(200);
    expect(JSON.parse(slow.body)).toEqual({ from: 'fastify' });
    const missing = await get(`${server.url}/nowhere`);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toMatchObject({ error: 'not_found' });
  });

  it('serves the front over HTTPS when the app has a certificate', async () => {
    const tls = await ensureSelfSignedCertificate(tempDir());
    const app = createApp({
      logger,
      https: tls,
      front: (_req, res) => {
        res.end('secure front');
        return true;
      },
    });
    const server = await startTestServer(app);
    expect(server.url).toMatch(/^https:/);
    const dispatcher = new Agent({ connect: { ca: tls.cert } });
    const response = await undiciFetch(`${server.url.replace('127.0.0.1', 'localhost')}/x`, {
      dispatcher,
    });
    expect(await response.text()).toBe('secure front');
    await dispatcher.close();
  });

  it('tells the front that closing has begun, and leaves requests that arrive then to Fastify (503)', async () => {
    let held: { res: ServerResponse; closing: () => boolean } | undefined;
    let offered = 0;
    const app = createApp({
      logger,
      front: (_req, res, state) => {
        offered++;
        held = { res, closing: () => state.closing };
        return true;
      },
    });
    const server = await startTestServer(app);
    const pending = get(`${server.url}/a`);
    await until(() => held !== undefined);
    expect(held?.closing()).toBe(false);
    // A request whose headers are still arriving when shutdown begins.
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.write('GET /b HTTP/1.1\r\nHost: x\r\n');
    await new Promise((resolve) => socket.once('connect', resolve));
    const closed = server.close();
    await until(() => held?.closing() === true);
    socket.write('\r\n');
    await until(() => received.includes('\r\n\r\n'));
    expect(received).toMatch(/^HTTP\/1\.1 503/);
    expect(received.toLowerCase()).toContain('connection: close');
    expect(offered).toBe(1);
    held?.res.end('done');
    expect((await pending).body).toBe('done');
    socket.destroy();
    await closed;
  });
});

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
