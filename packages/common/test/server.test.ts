import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  createApp,
  createLogger,
  ensureSelfSignedCertificate,
  gatewayError,
  jsonRpcError,
  oauthError,
  registerHealthRoutes,
  scimErrorBody,
  startServer,
} from '@mcp-identity/common';
import { startTestServer, useTempDir } from '@mcp-identity/common/testing';
import { Agent, fetch as undiciFetch } from 'undici';
import { describe, expect, it } from 'vitest';

const logger = createLogger({ level: 'silent', pretty: false });
const tempDir = useTempDir();

describe('startServer', () => {
  it('listens on an ephemeral port and reports a working URL', async () => {
    const app = createApp({ logger });
    app.get('/hello', async () => ({ hello: 'world' }));
    const server = await startTestServer(app);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.port).toBeGreaterThan(0);
    const response = await fetch(`${server.url}/hello`);
    expect(await response.json()).toEqual({ hello: 'world' });
  });

  it('serves HTTPS with the self-signed certificate', async () => {
    const tls = await ensureSelfSignedCertificate(tempDir());
    const server = await startTestServer(createApp({ logger, https: tls }));
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const dispatcher = new Agent({ connect: { ca: tls.cert } });
    const response = await undiciFetch(`${server.url.replace('127.0.0.1', 'localhost')}/nowhere`, {
      dispatcher,
    });
    expect(response.status).toBe(404);
    await dispatcher.close();
  });

  it('answers unknown routes and failures without a stack trace', async () => {
    const app = createApp({ logger });
    app.get('/boom', async () => {
      throw new Error('database password is hunter2');
    });
    const server = await startTestServer(app);
    const boom = await fetch(`${server.url}/boom`);
    expect(boom.status).toBe(500);
    expect(await boom.json()).toEqual({
      error: 'internal_error',
      message: 'Internal server error',
    });
    const missing = await fetch(`${server.url}/missing`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      error: 'not_found',
      message: 'Route GET /missing not found',
    });
    const badJson = await fetch(`${server.url}/boom`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(badJson.status).toBe(400);
    const body = (await badJson.json()) as { error: string };
    expect(body.error).toBe('bad_request');
    expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(js|ts):\d+/);
  });
});

describe('close', () => {
  it('cuts connections that never finish once the grace period is over', async () => {
    const app = createApp({ logger });
    app.get('/stream', (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.raw.write('event: open\n\n'); // and never ends, like an idle MCP stream
    });
    const server = await startServer(app, { port: 0, handleSignals: false, closeGraceMs: 300 });
    const response = await fetch(`${server.url}/stream`);
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('event: open\n\n');
    await server.close();
    await expect(reader.read()).rejects.toThrow();
  });
});

describe('health and error helpers', () => {
  it('serves liveness, out of the request log and never cached', async () => {
    const app = createApp({ logger });
    registerHealthRoutes(app, { livePath: '/health' });
    const server = await startTestServer(app);
    const response = await fetch(`${server.url}/health`);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('shapes OAuth, SCIM, gateway and JSON-RPC errors', async () => {
    const app = createApp({ logger });
    app.get('/oauth', (_q, reply) => oauthError(reply, 400, 'invalid_grant', 'Code expired'));
    app.get('/scim', () =>
      scimErrorBody(404, 'Specified resource (e.g., User) or endpoint does not exist.'),
    );
    app.get('/gw', (_q, reply) => gatewayError(reply, 409, 'exists'));
    const server = await startTestServer(app);
    const oauth = await fetch(`${server.url}/oauth`);
    expect(oauth.headers.get('cache-control')).toBe('no-store');
    expect(await oauth.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'Code expired',
    });
    const scim = await fetch(`${server.url}/scim`);
    expect(await scim.json()).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      detail: 'Specified resource (e.g., User) or endpoint does not exist.',
      status: '404',
    });
    expect(await (await fetch(`${server.url}/gw`)).json()).toEqual({
      status: 'error',
      message: 'exists',
    });
    expect(jsonRpcError(7, -32600, 'Invalid Request')).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32600, message: 'Invalid Request' },
    });
  });
});

describe('graceful shutdown', () => {
  async function startFixture(): Promise<{
    child: ChildProcess;
    url: string;
    lines: AsyncIterator<string>;
  }> {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures/slow-server.ts')],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const first = await lines.next();
    const url = String(first.value).replace('LISTENING ', '');
    return { child, url, lines };
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`lets an in-flight request finish on ${signal}, then exits 0`, async () => {
      const { child, url, lines } = await startFixture();
      const inFlight = fetch(`${url}/slow`);
      expect((await lines.next()).value).toBe('IN_FLIGHT');
      child.kill(signal);
      expect((await lines.next()).value).toBe('CLOSING');
      // Closing has begun: new connections are refused, the open request still completes.
      await expect(fetch(`${url}/slow`)).rejects.toThrow();
      child.stdin!.write('release\n');
      const response = await inFlight;
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ finished: true });
      const [code] = await once(child, 'exit');
      expect(code).toBe(0);
    });
  }
});
