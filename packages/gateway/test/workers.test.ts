import {
  expositionProblems,
  type FixedUpstream,
  metricValue,
  startFixedUpstream,
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

const tempDir = useTempDir('gw-workers-');

/** Requests handled per worker pid, from the primary's `/metrics`. */
async function requestsPerWorker(gateway: GatewayProcess): Promise<Map<number, number>> {
  const text = await (await gateway.management('/metrics')).text();
  const perWorker = new Map<number, number>();
  for (const match of text.matchAll(/^mcp_gateway_worker_requests_total\{pid="(\d+)"\} (\d+)$/gm)) {
    perWorker.set(Number(match[1]), Number(match[2]));
  }
  return perWorker;
}

function totalRequests(metrics: string, decision: string): number {
  return [...metrics.matchAll(/^mcp_gateway_requests_total\{([^}]*)\} (\d+)$/gm)]
    .filter((m) => m[1]?.includes(`decision="${decision}"`))
    .reduce((sum, m) => sum + Number(m[2]), 0);
}

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('gateway serve --workers 2', () => {
  let gateway: GatewayProcess;
  let upstream: FixedUpstream;
  // Fresh connections for each batch, so that the primary hands them to the workers in turn.
  const agents: Agent[] = [];

  /** `count` tools/calls, 16 at a time; their HTTP statuses. */
  async function callMany(count: number): Promise<number[]> {
    const dispatcher = new Agent({ connections: 16 });
    agents.push(dispatcher);
    const statuses: number[] = [];
    for (let sent = 0; sent < count; sent += 16) {
      const batch = Array.from({ length: Math.min(16, count - sent) }, async (_, i) => {
        const response = await fetch(`${gateway.plainUrl}/many/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: sent + i, method: 'tools/call' }),
          dispatcher,
        });
        await response.arrayBuffer();
        return response.status;
      });
      statuses.push(...(await Promise.all(batch)));
    }
    return statuses;
  }

  beforeAll(async () => {
    upstream = await startFixedUpstream();
    gateway = await startGatewayProcess(await writeGatewayConfig(tempDir()), ['--workers', '2']);
  });
  afterAll(async () => {
    await gateway?.stop();
    await Promise.all(agents.map((a) => a.close()));
    await upstream?.close();
  });

  it('routes a proxy deployed through the management API on every worker', async () => {
    const created = await gateway.management('/api/management/v1/mcp-proxies', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(proxyDefinition('many', '/many', upstream.mcpUrl)),
    });
    expect(created.status).toBe(201);
    const statuses = await callMany(200);
    expect(statuses).toEqual(Array(200).fill(200));
    expect(upstream.hits()).toBe(200);

    const perWorker = await requestsPerWorker(gateway);
    expect(perWorker.size).toBe(2);
    expect([...perWorker.values()].every((n) => n > 0)).toBe(true);
    expect([...perWorker.values()].reduce((a, b) => a + b, 0)).toBe(200);
    const metrics = await (await gateway.management('/metrics')).text();
    expect(totalRequests(metrics, 'allowed')).toBe(200);
  });

  it('adds up the process metrics of the primary and the workers in one exposition', async () => {
    const text = await (await gateway.management('/metrics')).text();
    expect(expositionProblems(text)).toEqual([]);
    expect(metricValue(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(metricValue(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toContain('mcp_gateway_uncaught_errors_total{kind="exception"} 0');
  });

  it('answers health the same from every worker', async () => {
    const dispatcher = new Agent({ connections: 8 });
    agents.push(dispatcher);
    const replies = await Promise.all(
      Array.from({ length: 16 }, async () => {
        const response = await fetch(`${gateway.plainUrl}/_gateway-health/ready`, {
          dispatcher,
        });
        return `${response.status} ${await response.text()}`;
      }),
    );
    expect(new Set(replies)).toEqual(new Set(['200 {"status":"ready"}']));
  });

  it('refuses a foreign Origin on every worker, as a single process does', async () => {
    const before = await requestsPerWorker(gateway);
    const dispatcher = new Agent({ connections: 8 });
    agents.push(dispatcher);
    const post = async (origin: string) => {
      const response = await fetch(`${gateway.plainUrl}/many/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
        dispatcher,
      });
      await response.arrayBuffer();
      return response.status;
    };
    const refused = await Promise.all(Array.from({ length: 16 }, () => post('https://evil.test')));
    expect(refused).toEqual(Array(16).fill(403));
    const after = await requestsPerWorker(gateway);
    expect(after.size).toBe(2);
    for (const [pid, count] of after) expect(count).toBeGreaterThan(before.get(pid) ?? 0);
    expect(await post(new URL(gateway.plainUrl).origin)).toBe(200);
  });

  it('replaces a worker that dies, and the new one serves the deployed proxies', async () => {
    const before = [...(await requestsPerWorker(gateway)).keys()];
    const victim = before[0] as number;
    process.kill(victim, 'SIGKILL');
    await waitFor(
      async () => {
        const pids = [...(await requestsPerWorker(gateway)).keys()];
        return pids.length === 2 && !pids.includes(victim);
      },
      15_000,
      'a replacement worker',
    );
    const statuses = await callMany(64);
    expect(statuses).toEqual(Array(64).fill(200));
    const replacement = [...(await requestsPerWorker(gateway)).entries()].find(
      ([pid]) => !before.includes(pid),
    );
    expect(replacement?.[1]).toBeGreaterThan(0);
  });

  it('drops a deleted proxy on every worker', async () => {
    const deleted = await gateway.management('/api/management/v1/mcp-proxies/many', {
      method: 'DELETE',
    });
    expect(deleted.status).toBe(200);
    expect(await callMany(32)).toEqual(Array(32).fill(404));
  });

  it('stops every worker with the primary on SIGTERM', async () => {
    const workers = [...(await requestsPerWorker(gateway)).keys()];
    await gateway.stop();
    expect(gateway.child.exitCode).toBe(0);
    await waitFor(async () => workers.every((pid) => !isRunning(pid)), 5_000, 'workers exit');
  });
});
