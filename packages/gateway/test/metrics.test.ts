import { expositionProblems, metricValue, useTempDir } from '@mcp-identity/common/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, proxyDefinition, startTestGateway } from './fixtures/gateway.js';
import { startUpstream, type Upstream } from './fixtures/upstream.js';

const tempDir = useTempDir('gw-metrics-');

describe('gateway /metrics', () => {
  let fx: GatewayFixture;
  let upstream: Upstream;
  beforeAll(async () => {
    upstream = await startUpstream();
    fx = await startTestGateway({ dataDir: tempDir() });
    expect((await fx.deploy(proxyDefinition('m-v1.0', '/m', upstream.mcpUrl))).status).toBe(201);
  });
  afterAll(async () => {
    await fx?.gateway.close();
    await upstream?.close();
  });

  it('counts MCP requests beside the process metrics, in one well-formed exposition', async () => {
    const scrape = async () => (await fetch(`${fx.gateway.managementUrl}/metrics`)).text();
    const before = await scrape();
    for (const id of [1, 2, 3]) {
      const response = await fetch(`${fx.gateway.plainUrl}/m/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }),
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const after = await scrape();
    const moved = (series: string) => metricValue(after, series) - metricValue(before, series);
    expect(
      moved('mcp_gateway_requests_total{proxy="m-v1.0",method="ping",decision="allowed"}'),
    ).toBe(3);
    expect(moved('mcp_gateway_request_duration_seconds_count{proxy="m-v1.0"}')).toBe(3);
    expect(after).toContain('mcp_gateway_uncaught_errors_total{kind="exception"} 0');
    expect(after).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(after).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    expect(metricValue(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(expositionProblems(after)).toEqual([]);
  });
});
