import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RunningProcess,
  spawnBareHttpRelay,
  spawnNodeProxy,
  spawnTcpRelay,
  TOOL_CALL_BODY,
  TOOL_RESULT_BODY,
} from '../src/kit/fast-upstream.js';
import { processTree } from '../src/kit/process-stats.js';

function commandOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
}

describe.runIf(process.platform === 'linux')('the Node.js proxies of bench:gateway', () => {
  const seen: { path: string; headers: IncomingHttpHeaders; body: string; socket: string }[] = [];
  const upstream = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.once('end', () => {
      if (request.headers['x-drop'] !== undefined) {
        request.socket.destroy();
        return;
      }
      seen.push({
        path: request.url ?? '',
        headers: request.headers,
        body,
        socket: `${request.socket.remotePort}`,
      });
      // The bare relay reads Content-Length framing only, as nginx `return 200` sends.
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(TOOL_RESULT_BODY),
        'x-upstream': 'fast',
      });
      response.end(TOOL_RESULT_BODY);
    });
  });
  let upstreamUrl = '';

  beforeAll(async () => {
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  it('runs the floor as cluster workers on one port, forwards, and stops every worker', async () => {
    const proxy = await spawnNodeProxy(upstreamUrl, 2);
    // tsx's esbuild service is a child too: the workers are the processes running the script.
    const workers = processTree(proxy.pid).filter(
      (pid) => pid !== proxy.pid && commandOf(pid).includes('node-proxy-server'),
    );
    try {
      expect(workers).toHaveLength(2);
      const response = await fetch(proxy.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: TOOL_CALL_BODY,
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(TOOL_RESULT_BODY);
    } finally {
      await proxy.stop();
    }
    for (const pid of workers) expect(existsSync(`/proc/${pid}`)).toBe(false);
  });

  /** Two tool calls in a row on one keep-alive connection, each answered with the upstream's. */
  async function twoCalls(relay: RunningProcess): Promise<void> {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const call = () =>
      new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>(
        (resolve, reject) => {
          const outgoing = httpRequest(
            relay.url,
            {
              method: 'POST',
              agent,
              headers: {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(TOOL_CALL_BODY),
              },
            },
            (response) => {
              let body = '';
              response.setEncoding('utf8');
              response.on('data', (chunk: string) => {
                body += chunk;
              });
              response.once('end', () =>
                resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
              );
            },
          );
          outgoing.once('error', reject);
          // Head and body in separate packets: a relay must wait for the whole message.
          outgoing.flushHeaders();
          setImmediate(() => outgoing.end(TOOL_CALL_BODY));
        },
      );
    try {
      for (let n = 0; n < 2; n++) {
        expect(await call()).toEqual({
          status: 200,
          headers: expect.objectContaining({
            'x-upstream': 'fast',
            'content-length': String(Buffer.byteLength(TOOL_RESULT_BODY)),
          }),
          body: TOOL_RESULT_BODY,
        });
      }
    } finally {
      agent.destroy();
      await relay.stop();
    }
  }

  it('lower bound: relays tool calls byte for byte over one upstream connection per client connection', async () => {
    seen.length = 0;
    await twoCalls(await spawnTcpRelay(upstreamUrl));
    expect(seen.map((s) => s.body)).toEqual([TOOL_CALL_BODY, TOOL_CALL_BODY]);
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it('lower bound: frames requests and answers by Content-Length, to the upstream path, reusing its connection', async () => {
    seen.length = 0;
    await twoCalls(await spawnBareHttpRelay(upstreamUrl));
    expect(seen.map((s) => [s.path, s.body])).toEqual([
      ['/mcp', TOOL_CALL_BODY],
      ['/mcp', TOOL_CALL_BODY],
    ]);
    expect(seen[0]?.headers.host).toBe(new URL(upstreamUrl).host);
    expect(seen[0]?.headers['content-type']).toBe('application/json');
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it('lower bound: closes the client connection whose request the upstream dropped, and goes on', async () => {
    const relay = await spawnBareHttpRelay(upstreamUrl);
    try {
      const dropped = fetch(relay.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-drop': '1' },
        body: TOOL_CALL_BODY,
      });
      await expect(dropped).rejects.toThrow('fetch failed');
      const next = await fetch(relay.url, { method: 'POST', body: TOOL_CALL_BODY });
      expect(await next.text()).toBe(TOOL_RESULT_BODY);
    } finally {
      await relay.stop();
    }
  });
});
