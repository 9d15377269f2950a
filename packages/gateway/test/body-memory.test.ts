import { connect } from 'node:net';
import { useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import {
  type GatewayProcess,
  startGatewayProcess,
  writeGatewayConfig,
} from './fixtures/gateway-process.js';
import { CLIENT_ID, type KeyManager, startKeyManager } from './fixtures/key-manager.js';
import { postMcp } from './fixtures/mcp-client.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-bodies-');
const MiB = 1024 * 1024;
/** Growth allowed while 300 unauthenticated 1 MB bodies stall (the old gateway grew ~270 MB). */
const RSS_CEILING_GROWTH = 64 * MiB;

async function pollUntil(condition: () => boolean, deadlineMs: number, onTick?: () => void) {
  const until = Date.now() + deadlineMs;
  while (!condition() && Date.now() < until) {
    onTick?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  onTick?.();
}

/** Sends headers declaring `declared` bytes and `sent` bytes of body, then stalls. */
function stalledPost(url: string, path: string, declared: number, body: Buffer, extra = '') {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const state = { socket, response: '', closed: false };
  socket.on('data', (chunk: Buffer) => {
    state.response += chunk.toString('latin1');
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    state.closed = true;
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\ncontent-type: application/json\r\n` +
      `accept: application/json, text/event-stream\r\n${extra}content-length: ${declared}\r\n\r\n`,
  );
  socket.write(body);
  return state;
}

describe('unauthenticated bodies against a gateway child process', () => {
  let km: KeyManager;
  let upstream: Upstream;
  let gateway: GatewayProcess;

  beforeAll(async () => {
    km = await startKeyManager();
    upstream = await startUpstream();
    gateway = await startGatewayProcess(await writeGatewayConfig(tempDir(), { keyManager: km }));
    const auth = { name: 'mcp-auth', version: 'v1', params: { audiences: [CLIENT_ID] } };
    const deployed = await gateway.deploy(
      proxyDefinition('scim-v1.0', '/scim', upstream.mcpUrl, [auth]),
    );
    expect(deployed.status).toBe(201);
  });
  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([upstream?.close(), km?.stop()]);
  });

  it('refuses 300 stalled unauthenticated 1 MB requests from their headers, staying within 64 MiB of its idle RSS', async () => {
    // Warm the paths the attack uses, then take the idle baseline.
    const warm = await postMcp(`${gateway.plainUrl}/scim/mcp`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
    });
    expect(warm.status).toBe(401);
    const baseline = gateway.rss();
    let peak = baseline;
    const body = Buffer.alloc(1_000_000, 0x20);
    const sockets = Array.from({ length: 300 }, () =>
      stalledPost(gateway.plainUrl, '/scim/mcp', MiB, body),
    );
    await pollUntil(
      () => sockets.every((s) => s.response.includes('\r\n\r\n') || s.closed),
      30_000,
      () => {
        peak = Math.max(peak, gateway.rss());
      },
    );
    const answered = sockets.filter((s) => s.response.startsWith('HTTP/1.1 401')).length;
    // The gateway closes each connection after its 401 instead of reading the rest; a client
    // still sending may see that close as a reset before it reads the 401.
    const cut = sockets.filter((s) => s.response === '' && s.closed).length;
    for (const s of sockets) s.socket.destroy();
    expect(peak - baseline).toBeLessThan(RSS_CEILING_GROWTH);
    expect(answered + cut).toBe(300);
    expect(answered).toBeGreaterThan(0);
    // Nothing accumulates once the clients are gone (V8 keeps its grown heap, so RSS is not
    // expected to fall back to the baseline, only to stay under the ceiling).
    await pollUntil(() => sockets.every((s) => s.closed), 5_000);
    expect(gateway.rss() - baseline).toBeLessThan(RSS_CEILING_GROWTH);
    const health = await fetch(`${gateway.plainUrl}/_gateway-health/healthy`);
    expect(health.status).toBe(200);
  }, 60_000);
});

describe('the in-flight body budget', () => {
  it('answers 503 when bodies being received would exceed limits.max_inflight_request_bytes, and recovers', async () => {
    const upstream = await startUpstream();
    const fx = await startTestGateway({
      dataDir: tempDir(),
      limits: { max_request_body_bytes: 100_000, max_inflight_request_bytes: 150_000 },
    });
    try {
      expect((await fx.deploy(proxyDefinition('open-v1.0', '/open', upstream.mcpUrl))).status).toBe(
        201,
      );
      const first = stalledPost(fx.gateway.plainUrl, '/open/mcp', 100_000, Buffer.alloc(10, 0x20));
      // The first body is being received (its bytes are reserved) when the second one arrives.
      await pollUntil(() => first.socket.bytesWritten > 0, 2_000);
      const second = stalledPost(fx.gateway.plainUrl, '/open/mcp', 100_000, Buffer.alloc(10, 0x20));
      await pollUntil(() => second.response.includes('\r\n\r\n'), 5_000);
      expect(second.response).toMatch(/^HTTP\/1\.1 503/);
      expect(second.response.toLowerCase()).toContain('retry-after: 1');
      second.socket.destroy();
      first.socket.destroy();
      await pollUntil(() => first.closed, 2_000);
      // The reservation is returned when the stalled request goes away.
      const ok = await postMcp(`${fx.gateway.plainUrl}/open/mcp`, {
        jsonrpc: '2.0',
        id: 1,
        method: 'ping',
      });
      expect(ok.status).toBe(200);
    } finally {
      await fx.gateway.close();
      await upstream.close();
    }
  });
});
