import { lineLogger, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { type HeldUpstream, startHeldUpstream } from './fixtures/held-upstream.js';
import { type Json, MCP_POST_HEADERS, postMcp, toolCall } from './fixtures/mcp-client.js';

const tempDir = useTempDir('gw-queue-');

interface Answer {
  id: number;
  status: number;
  retryAfter: string | null;
  body: Json;
}

/** A promise resolved once `tick` has been called `count` times. */
function countdown(count: number) {
  let resolve: () => void = () => undefined;
  const done = new Promise<void>((r) => {
    resolve = r;
  });
  let left = count;
  if (left <= 0) resolve();
  return {
    done,
    tick: () => {
      left -= 1;
      if (left === 0) resolve();
    },
  };
}

/** A tool call through `url`; `onRefused` is told of every answer that is not a 200. */
async function call(url: string, id: number, onRefused: () => void, signal?: AbortSignal) {
  const response = await fetch(url, {
    method: 'POST',
    headers: MCP_POST_HEADERS,
    body: JSON.stringify(toolCall('slow_tool', {}, id)),
    signal,
  });
  const answer: Answer = {
    id,
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: await response.json(),
  };
  if (answer.status !== 200) onRefused();
  return answer;
}

/** A proxy's value of one of the gateway's per-proxy gauges, as scraped now. */
async function gauge(fx: GatewayFixture, name: string, proxy: string): Promise<number> {
  const metrics = await fx.gateway.renderMetrics();
  const line = metrics.split('\n').find((l) => l.startsWith(`${name}{proxy="${proxy}"} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

type AuditLine = {
  proxy: string;
  decision: string;
  latencyMs: number;
  upstreamStatus?: number;
  upstreamFailure?: string;
};

async function startGateway(lines: AuditLine[], limits: Record<string, unknown>) {
  return startTestGateway({
    dataDir: tempDir(),
    limits,
    logger: lineLogger((line) => {
      if (line.msg === 'mcp request') lines.push(line.audit as AuditLine);
    }),
  });
}

describe('200 concurrent calls to an upstream that holds every answer', () => {
  const POOL = 8;
  const QUEUE = 16;
  const WAIT_MS = 200;
  /**
   * Beyond the wait: the time a request spends in the gateway before it queues and after (the
   * audit latency counts both), with the gateway, its 200 clients and the upstream sharing one
   * event loop on a loaded 2-core machine (up to ~170 ms seen). The old queue never answered.
   */
  const SLACK_MS = 1_000;
  const CALLS = 200;
  let upstream: HeldUpstream;
  let fx: GatewayFixture;
  const audit: AuditLine[] = [];

  beforeAll(async () => {
    upstream = await startHeldUpstream();
    fx = await startGateway(audit, {
      upstream_connections: POOL,
      upstream_queue_length: QUEUE,
      upstream_queue_timeout: `${WAIT_MS}ms`,
    });
    for (const [name, context] of [
      ['slow-v1.0', '/slow'],
      ['other-v1.0', '/other'],
    ] as const) {
      expect((await fx.deploy(proxyDefinition(name, context, upstream.mcpUrl))).status).toBe(201);
    }
  });
  afterAll(async () => {
    upstream?.releaseAll();
    await fx?.gateway.close();
    await upstream?.close();
  });

  it('refuses the excess 503 with Retry-After within the wait bound, unsent; another proxy of the same upstream is still served', async () => {
    const refused = countdown(CALLS - POOL);
    const url = `${fx.gateway.plainUrl}/slow/mcp`;
    const calls = Array.from({ length: CALLS }, (_, i) => call(url, i + 1, refused.tick));
    // Nothing is released before every refusal is in: a request that waited for a connection
    // past the bound would keep this waiting (the old unbounded queue never answered them).
    await refused.done;
    await upstream.whenHolding(POOL);
    expect(upstream.received).toBe(POOL);
    expect(await gauge(fx, 'mcp_gateway_upstream_in_flight', 'slow-v1.0')).toBe(POOL);
    expect(await gauge(fx, 'mcp_gateway_upstream_queued', 'slow-v1.0')).toBe(0);

    // The first proxy's connections are all held and its queue is full: the second proxy, in
    // front of the same upstream, has connections of its own.
    const other = await postMcp(`${fx.gateway.plainUrl}/other/mcp`, {
      jsonrpc: '2.0',
      id: 'other-1',
      method: 'ping',
    });
    expect(other.status).toBe(200);
    expect(await other.json()).toEqual({ jsonrpc: '2.0', id: 'other-1', result: {} });
    expect(upstream.received).toBe(POOL + 1);

    upstream.releaseAll();
    const answers = await Promise.all(calls);
    const served = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 503);
    expect(served).toHaveLength(POOL);
    expect(busy).toHaveLength(CALLS - POOL);
    for (const answer of busy) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.body).toEqual({
        jsonrpc: '2.0',
        id: answer.id,
        error: { code: -32000, message: 'Upstream MCP server busy; retry later' },
      });
    }
    // The upstream saw the pool's worth of calls and nothing more.
    expect(upstream.received).toBe(POOL + 1);

    const lines = audit.filter((line) => line.proxy === 'slow-v1.0');
    expect(lines).toHaveLength(CALLS);
    const allowed = lines.filter((line) => line.decision === 'allowed');
    expect(allowed).toHaveLength(POOL);
    for (const line of allowed) expect(line).toMatchObject({ upstreamStatus: 200 });
    const timedOut = lines.filter((line) => line.upstreamFailure === 'queue_timeout');
    const full = lines.filter((line) => line.upstreamFailure === 'queue_full');
    // The queue's places were taken (and freed again only by their wait running out).
    expect(timedOut.length).toBeGreaterThanOrEqual(QUEUE);
    expect(timedOut.length + full.length).toBe(CALLS - POOL);
    for (const line of [...timedOut, ...full]) {
      expect(line.decision).toBe('unavailable');
      expect(line.upstreamStatus).toBeUndefined();
    }
    // No request waited for a connection longer than the configured bound.
    for (const line of timedOut) {
      expect(line.latencyMs).toBeGreaterThanOrEqual(WAIT_MS - 1);
      expect(line.latencyMs).toBeLessThan(WAIT_MS + SLACK_MS);
    }
    for (const line of full) expect(line.latencyMs).toBeLessThan(SLACK_MS);

    const metrics = await fx.gateway.renderMetrics();
    expect(metrics).toContain(
      `mcp_gateway_upstream_failures_total{proxy="slow-v1.0",failure="queue_timeout"} ${timedOut.length}`,
    );
    expect(metrics).toContain(
      `mcp_gateway_upstream_failures_total{proxy="slow-v1.0",failure="queue_full"} ${full.length}`,
    );
  });
});

describe('a queue with room', () => {
  const POOL = 2;
  const QUEUE = 3;
  let upstream: HeldUpstream;
  let fx: GatewayFixture;
  const audit: AuditLine[] = [];
  let url = '';

  beforeAll(async () => {
    upstream = await startHeldUpstream();
    // A wait no test reaches: these requests are let through by connections freeing.
    fx = await startGateway(audit, {
      upstream_connections: POOL,
      upstream_queue_length: QUEUE,
      upstream_queue_timeout: '1m',
    });
    expect((await fx.deploy(proxyDefinition('q-v1.0', '/q', upstream.mcpUrl))).status).toBe(201);
    url = `${fx.gateway.plainUrl}/q/mcp`;
  });
  afterAll(async () => {
    upstream?.releaseAll();
    await fx?.gateway.close();
    await upstream?.close();
  });

  it('sends queued calls one by one as connections free, and refuses only past the queue length', async () => {
    const before = upstream.received;
    const first = [1, 2].map((id) => call(url, id, () => undefined));
    await upstream.whenHolding(POOL);
    const refused = countdown(2);
    const more = [3, 4, 5, 6, 7].map((id) => call(url, id, refused.tick));
    await refused.done;
    expect(upstream.received - before).toBe(POOL);
    for (let freed = 1; freed <= QUEUE; freed++) {
      upstream.releaseOne();
      // The freed connection goes to a queued call, which reaches the upstream.
      await upstream.whenHolding(POOL);
      expect(upstream.received - before).toBe(POOL + freed);
    }
    upstream.releaseAll();
    const answers = await Promise.all([...first, ...more]);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(POOL + QUEUE);
    expect(answers.filter((a) => a.status === 503)).toHaveLength(2);
    expect(upstream.received - before).toBe(POOL + QUEUE);
  });

  it('gives a queued call’s place back when its client goes away', async () => {
    const before = upstream.received;
    const first = [11, 12].map((id) => call(url, id, () => undefined));
    await upstream.whenHolding(POOL);
    const gone = audit.length;
    const queued = () => gauge(fx, 'mcp_gateway_upstream_queued', 'q-v1.0');
    const controllers = Array.from({ length: QUEUE }, () => new AbortController());
    const abandoned = controllers.map((controller, i) =>
      call(url, 20 + i, () => undefined, controller.signal).catch(() => 'aborted'),
    );
    await expect.poll(queued).toBe(QUEUE);
    await expect(call(url, 30, () => undefined)).resolves.toMatchObject({ status: 503 });
    for (const controller of controllers) controller.abort();
    expect(await Promise.all(abandoned)).toEqual(Array(QUEUE).fill('aborted'));
    await expect.poll(queued).toBe(0);
    await expect
      .poll(() => audit.slice(gone).filter((l) => l.upstreamFailure === 'client_closed').length)
      .toBe(QUEUE);
    // Their places are free again: as many calls queue, and are served once connections free.
    const later = Array.from({ length: QUEUE }, (_, i) => call(url, 40 + i, () => undefined));
    await expect.poll(queued).toBe(QUEUE);
    for (let freed = 1; freed <= QUEUE; freed++) {
      upstream.releaseOne();
      await upstream.whenHolding(POOL);
    }
    upstream.releaseAll();
    const answers = await Promise.all([...first, ...later]);
    expect(answers.map((a) => a.status)).toEqual(Array(POOL + QUEUE).fill(200));
    expect(upstream.received - before).toBe(POOL + QUEUE);
  });
});
