import {
  describeRequiring,
  type FixedUpstream,
  metricValue,
  redisMissing,
  startFixedUpstream,
  startRedis,
  type TestRedis,
  useTempDir,
} from '@mcp-identity/common/testing';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyDefinition } from './fixtures/gateway.js';
import {
  type GatewayProcess,
  startGatewayProcess,
  waitFor,
  writeGatewayConfig,
} from './fixtures/gateway-process.js';

const tempDir = useTempDir('gw-ratelimit-shared-');

/** Three `search_users` calls a minute per caller (here: the loopback address). */
const LIMITED = [
  {
    name: 'mcp-ratelimit',
    version: 'v1',
    params: { tools: [{ name: 'search_users', limits: [{ limit: 3, duration: '1m' }] }] },
  },
];

const toolCall = (id: number, name = 'search_users') =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

/** A POST of `body` to the proxy at `baseUrl`; its status, `Retry-After` and JSON body. */
async function post(
  baseUrl: string,
  body: string,
  dispatcher?: Agent,
): Promise<{ status: number; retryAfter: string | null; json: unknown }> {
  const response = await fetch(`${baseUrl}/limited/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    ...(dispatcher ? { dispatcher } : {}),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    json: await response.json(),
  };
}

/** The statuses of `count` concurrent calls, each on a fresh connection. */
async function callConcurrently(baseUrls: string[], count: number, agents: Agent[]) {
  const dispatcher = new Agent({ connections: count, pipelining: 0 });
  agents.push(dispatcher);
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const { status } = await post(
        baseUrls[i % baseUrls.length] as string,
        toolCall(i),
        dispatcher,
      );
      return status;
    }),
  );
}

/** Requests handled per worker pid, from the primary's `/metrics`. */
async function requestsPerWorker(gateway: GatewayProcess): Promise<number[]> {
  const text = await (await gateway.management('/metrics')).text();
  return [...text.matchAll(/^mcp_gateway_worker_requests_total\{pid="\d+"\} (\d+)$/gm)].map(
    (match) => Number(match[1]),
  );
}

describe('mcp-ratelimit across gateway serve --workers 2', () => {
  let gateway: GatewayProcess;
  let upstream: FixedUpstream;
  const agents: Agent[] = [];

  beforeAll(async () => {
    upstream = await startFixedUpstream();
    gateway = await startGatewayProcess(await writeGatewayConfig(tempDir()), ['--workers', '2']);
    const created = await gateway.deploy(
      proxyDefinition('limited', '/limited', upstream.mcpUrl, LIMITED),
    );
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await gateway?.stop();
    await Promise.all(agents.map((a) => a.close()));
    await upstream?.close();
  });

  it('allows exactly 3 calls a minute in all, whichever worker serves them', async () => {
    // Fresh connections at once, which the primary hands to the two workers in turn.
    const statuses = await callConcurrently([gateway.plainUrl], 12, agents);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9);
    expect(upstream.hits()).toBe(3);
    // Both workers took part: the limit held across processes, not inside one.
    const perWorker = await requestsPerWorker(gateway);
    expect(perWorker).toHaveLength(2);
    expect(perWorker.every((n) => n > 0)).toBe(true);
  });

  it('refuses a limited call with 503 when the primary does not answer, and asks it nothing for the rest', async () => {
    // One connection, opened now: it stays with the worker that accepted it while the primary
    // (which hands out new connections and keeps the counters) is stopped.
    const dispatcher = new Agent({ connections: 1 });
    agents.push(dispatcher);
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    expect((await post(gateway.plainUrl, ping, dispatcher)).status).toBe(200);
    const before = upstream.hits();
    process.kill(gateway.pid, 'SIGSTOP');
    try {
      // No limit matches a ping: no question to the primary, so it is served as ever.
      expect((await post(gateway.plainUrl, ping, dispatcher)).status).toBe(200);
      const refused = await post(gateway.plainUrl, toolCall(99), dispatcher);
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toBe('2');
      expect(refused.json).toMatchObject({
        jsonrpc: '2.0',
        id: 99,
        error: { code: -32000, message: 'Rate limit cannot be checked; retry later' },
      });
    } finally {
      process.kill(gateway.pid, 'SIGCONT');
    }
    expect(upstream.hits()).toBe(before + 1);
    // The primary answers again: the window it keeps is still full.
    expect((await post(gateway.plainUrl, toolCall(100), dispatcher)).status).toBe(429);
  });
});

describeRequiring(
  'mcp-ratelimit across two gateway instances sharing Redis',
  redisMissing(),
  () => {
    let redis: TestRedis;
    let upstream: FixedUpstream;
    const gateways: GatewayProcess[] = [];
    const agents: Agent[] = [];
    const plainUrls = () => gateways.map((g) => g.plainUrl);

    beforeAll(async () => {
      redis = await startRedis();
      upstream = await startFixedUpstream();
      // Two instances, one of them with two workers: three processes that count in one Redis.
      // Each has its own SQLite store, so each is given the same proxy.
      for (const workers of ['1', '2']) {
        const gateway = await startGatewayProcess(
          await writeGatewayConfig(tempDir()),
          ['--workers', workers],
          { GATEWAY_RATELIMIT_REDIS_URL: redis.url },
        );
        gateways.push(gateway);
        const created = await gateway.deploy(
          proxyDefinition('limited', '/limited', upstream.mcpUrl, LIMITED),
        );
        expect(created.status).toBe(201);
      }
    }, 60_000);
    afterAll(async () => {
      await Promise.all(gateways.map((g) => g.stop()));
      await Promise.all(agents.map((a) => a.close()));
      await upstream?.close();
      await redis?.close();
    });

    it('allows exactly 3 calls a minute in all, whichever instance serves them', async () => {
      const statuses = await callConcurrently(plainUrls(), 12, agents);
      expect(statuses.filter((s) => s === 200)).toHaveLength(3);
      expect(statuses.filter((s) => s === 429)).toHaveLength(9);
      expect(upstream.hits()).toBe(3);
    });

    it('refuses limited calls with 503 while Redis is down, serves the rest, and recovers without a restart', async () => {
      const [single] = gateways as [GatewayProcess];
      await redis.stop();
      const before = upstream.hits();
      for (const baseUrl of plainUrls()) {
        const refused = await post(baseUrl, toolCall(7));
        expect(refused.status).toBe(503);
        expect(refused.retryAfter).toBe('2');
        expect(refused.json).toMatchObject({
          id: 7,
          error: { code: -32000, message: 'Rate limit cannot be checked; retry later' },
        });
        // A call no limit governs does not need the counters.
        expect((await post(baseUrl, toolCall(8, 'delete_user'))).status).toBe(200);
      }
      expect(upstream.hits()).toBe(before + 2);
      const metrics = await (await single.management('/metrics')).text();
      expect(
        metricValue(
          metrics,
          'mcp_gateway_requests_total{proxy="limited",method="tools/call",decision="unavailable"}',
        ),
      ).toBe(1);
      // The audit line says why (written in batches: wait for it).
      await waitFor(
        async () =>
          single.output().includes('mcp-ratelimit: the rate-limit counters are unreachable'),
        5_000,
        'the audit line',
      );

      // Redis restarts empty: a new window, counted again without restarting the gateway.
      await redis.start();
      await waitFor(
        async () => (await post(single.plainUrl, toolCall(9))).status === 200,
        10_000,
        'counting in Redis again',
      );
      const statuses: number[] = [];
      for (let id = 10; id < 13; id += 1)
        statuses.push((await post(single.plainUrl, toolCall(id))).status);
      expect(statuses).toEqual([200, 200, 429]);
    });
  },
);
